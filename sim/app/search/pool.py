"""The local executors: a process pool (the default) and an inline one for --jobs 1.

Both hand back `concurrent.futures.Future`s, the interface the runner also
gets from Dask. Pool workers ignore SIGINT: Ctrl-C is the runner's to
handle, so a stopped search can still record what has finished. The pool
starts its workers at once (one throwaway task), before the runner opens
its storage or starts its writer thread, so the forked workers inherit
neither an open database nor a thread.
"""
from __future__ import annotations

import signal
from concurrent.futures import Future, ProcessPoolExecutor


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class InlineExecutor:
    """Runs each call at submit time, in this process (one job: no pool to start)."""

    workers = 1

    def submit(self, fn, *args) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args))
        except Exception as exc:  # noqa: BLE001  (the runner records it against the trial)
            fut.set_exception(exc)
        return fut

    def shutdown(self, cancel: bool = False) -> None:
        pass


class PoolExecutor:
    """A process pool of `jobs` workers."""

    def __init__(self, jobs: int):
        self.workers = jobs
        self._pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)
        self._pool.submit(int)

    def submit(self, fn, *args) -> Future:
        return self._pool.submit(fn, *args)

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)


def local_executor(jobs: int):
    return InlineExecutor() if jobs <= 1 else PoolExecutor(jobs)
