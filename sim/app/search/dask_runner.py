"""Evaluations on a Dask distributed cluster (`--scheduler tcp://host:port`).

The runner stays where it is (it owns the Optuna study and its storage); only
the simulations travel. `connect` gives up after a short timeout so a wrong
address is one line and exit code 2, not a hang. Workers need megasim
importable (the same checkout or install); the functions they run are the
module-level ones in `sim.search.objective`.
"""
from __future__ import annotations

from megasim.contract.errors import MegasimError


class DaskExecutor:
    """The `submit`/`shutdown` face of a `dask.distributed.Client`."""

    def __init__(self, client, owns_client: bool = True):
        self.client = client
        self._owns = owns_client

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def shutdown(self, cancel: bool = False) -> None:
        if self._owns:
            self.client.close()

    @property
    def workers(self) -> int:
        return sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values())


def connect(address: str, timeout_s: float = 3.0) -> DaskExecutor:
    """A client on the scheduler at `address`; MegasimError if it cannot be reached in time."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise MegasimError("--scheduler needs dask[distributed] (pip install 'megasim[dask]')") from None
    try:
        client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise MegasimError(f"cannot reach the Dask scheduler at {address} within {timeout_s:g} s "
                           f"({type(exc).__name__})") from None
    return DaskExecutor(client)
