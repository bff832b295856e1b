"""Evaluations on a Dask distributed cluster: `--scheduler local[:N]` or `--scheduler tcp://host:port`.

`local:N` starts a `LocalCluster` of N single-threaded worker processes
(the simulator is pure Python: threads would share one core) and stops it
with the search; an address attaches to a running scheduler and leaves it
running. The runner stays where it is (it owns the Optuna study and its
storage); only the simulations travel. `connect` gives up after a short
timeout so a wrong address is one line and exit code 2, not a hang.
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
        raise MegasimError("--scheduler needs dask[distributed] (pip install 'megasim[dask]')") from None
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


def connect(address: str, timeout_s: float = 3.0) -> DaskExecutor:
    """A client on the scheduler at `address`; MegasimError if it cannot be reached in time."""
    Client = _client_class()
    try:
        client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise MegasimError(f"cannot reach the Dask scheduler at {address} within {timeout_s:g} s "
                           f"({type(exc).__name__})") from None
    return DaskExecutor(client)
