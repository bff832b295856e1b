"""Evaluations on a Dask distributed cluster: `--scheduler local[:N]` or `--scheduler tcp://host:port`.

`local:N` starts a `LocalCluster` of N single-threaded worker processes
(the simulator is pure Python: threads would share one core) and stops it
with the search; an address attaches to a running scheduler and leaves it
running. The runner stays where it is (it owns the Optuna study and its
storage); only the simulations travel. An address Dask cannot parse (no
port, an unknown scheme) is refused before anything starts, and `connect`
gives up after a short timeout, so a wrong address is one line and exit
code 2, not a hang. A client whose start failed is stopped here: left to
its finalizer, it waits 6 s to close a connection it never made and then
prints a traceback as Python exits.
Workers need megasim importable (the same checkout or install); the
functions they run are the module-level ones in `megasim.app.search.objective`.
"""
from __future__ import annotations

from megasim.contract.errors import MegasimError


class DaskExecutor:
    """The `submit`/`shutdown` face of a `dask.distributed.Client` (and of the cluster it started)."""

    def __init__(self, client, cluster=None):
        self.client = client
        self._cluster = cluster

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def submit_to(self, worker: int, fn, *args):
        """`fn(*args)` on the `worker`-th worker (by address), so that calls meant to run side by side do."""
        addresses = sorted(self.client.scheduler_info()["workers"])
        return self.client.submit(fn, *args, pure=False, workers=[addresses[worker]], allow_other_workers=False)

    def shutdown(self, cancel: bool = False) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    @property
    def workers(self) -> int:
        return sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values())


def local_workers(scheduler: str, jobs: int) -> int | None:
    """N of `local` (N = jobs) or `local:N`; None for an address. Checked before anything starts."""
    name, sep, count = scheduler.partition(":")
    if name != "local":
        _check_address(scheduler)
        return None
    if not sep:
        return jobs
    try:
        n = int(count)
    except ValueError:
        n = 0
    if n < 1:
        raise MegasimError(f"--scheduler local:N wants a worker count >= 1, got {scheduler!r}")
    return n


def _client_class():
    try:
        from dask.distributed import Client
    except ImportError:
        raise MegasimError('--scheduler needs Dask: pip install "dask[distributed]"') from None
    return Client


def start_local(workers: int) -> DaskExecutor:
    """A LocalCluster of `workers` processes, one thread each, and a client on it."""
    import logging
    _client_class()
    from dask.distributed import Client, LocalCluster
    try:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
    except (RuntimeError, OSError, TimeoutError) as exc:
        raise MegasimError(f"cannot start a local Dask cluster of {workers} workers: {exc}") from None
    return DaskExecutor(Client(cluster, set_as_default=False), cluster)


def _check_address(address: str) -> None:
    """Refuse an address of a scheme Dask does not know (`bogus://x:1`), or a network one without a host
    and port (`bogus`, `tcp://host`)."""
    _client_class()
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend
    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except ValueError as exc:
        raise MegasimError(f"--scheduler {address!r}: {exc}; expected local, local:N or a scheduler "
                           f"address such as tcp://host:8786") from None


def connect(address: str, timeout_s: float = 3.0) -> DaskExecutor:
    """A client on the scheduler at `address`; MegasimError if it cannot be reached in time. Dask's timeout
    covers the connection, not the handshake after it: a port that accepts and never answers would hold the
    client forever, so the whole start runs in a daemon thread that gets twice the timeout."""
    import threading
    Client = _client_class()
    client = Client.__new__(Client)
    failed: list = []

    def start():
        try:
            client.__init__(address, timeout=f"{timeout_s}s", set_as_default=False)
        except BaseException as exc:  # re-raised below, in the caller's thread
            failed.append(exc)
    starter = threading.Thread(target=start, daemon=True, name="megasim-dask-connect")
    starter.start()
    starter.join(2 * timeout_s + 1.0)
    if starter.is_alive():
        _abandon(client)
        raise MegasimError(f"the Dask scheduler at {address} accepted the connection but did not answer within "
                           f"{2 * timeout_s + 1.0:g} s; is it a Dask scheduler?")
    try:
        if failed:
            raise failed[0]
    except (OSError, TimeoutError) as exc:
        _abandon(client)
        raise MegasimError(f"cannot reach the Dask scheduler at {address} within {timeout_s:g} s "
                           f"({type(exc).__name__})") from None
    except (ValueError, TypeError) as exc:
        _abandon(client)
        why = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise MegasimError(f"cannot connect to the Dask scheduler at {address}: {why}") from None
    return DaskExecutor(client)


def _abandon(client) -> None:
    """Mark a client whose start failed closed and stop its event-loop thread, so its finalizer has
    nothing left to close."""
    runner = getattr(client, "_loop_runner", None)
    client.status = "closed"
    if runner is not None:
        runner.stop()
