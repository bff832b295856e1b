"""A calibration spread over a host's GPUs: the parts balanced into groups, each group measured at once on its own
GPU, and what each part reports gathered as on one GPU."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from megasim.app.calibrate import spread
from megasim.app.calibrate.measure import PARTS


def test_the_parts_are_balanced_over_the_gpus_with_the_microbenchmarks_first():
    parts = [p for p in PARTS if p != "tasks"]
    assert spread.plan(parts, 1)[0][0] == "hardware" and sorted(spread.plan(parts, 1)[0]) == sorted(parts)
    two = spread.plan(parts, 2)
    assert two[0][0] == "hardware" and sorted(sum(two, [])) == sorted(parts)
    loads = [sum(spread.SECONDS[p] for p in g) for g in two]
    assert max(loads) <= 0.55 * sum(loads)
    assert len(spread.plan(parts, 8)) == len(parts)


class _Pinned:
    """`DaskExecutor.submit_to`'s face on threads: a call per worker index."""

    def __init__(self):
        self.pool, self.workers = ThreadPoolExecutor(4), []

    def submit_to(self, worker, fn, *args):
        self.workers.append(worker)
        return self.pool.submit(fn, *args)


def test_each_group_runs_on_its_own_gpu_at_the_same_time(monkeypatch):
    current, spans = threading.local(), {}

    class Device:
        def __init__(self, i):
            self.i = i

        def use(self):
            current.device = self.i

    monkeypatch.setattr("megasim.gpu.backend.require_cupy", lambda: SimpleNamespace(cuda=SimpleNamespace(Device=Device)))

    def measure(gpu, out, reps, parts, budget_s, corpus, log):
        t0 = time.perf_counter()
        time.sleep(0.2)
        spans[current.device] = (t0, time.perf_counter(), parts)
        return {p: "done" for p in parts if p != "tasks"}

    monkeypatch.setattr("megasim.app.calibrate.measure.calibrate_measure", measure)
    executor = _Pinned()
    status = spread.measure_spread("h200", "raw", 20, PARTS, 100.0, 32, executor, 2)
    assert status == {p: "done" for p in PARTS if p != "tasks"} and executor.workers == [0, 1]
    (a0, a1, first), (b0, b1, second) = spans[0], spans[1]
    assert a0 < b1 and b0 < a1, "the two groups ran one after the other"
    assert first[0] == "hardware" and "tasks" in first and "tasks" not in second


@pytest.mark.slow
def test_a_call_submitted_to_a_worker_runs_on_that_worker():
    from megasim.app.search.dask_runner import start_local
    executor = start_local(2)
    try:
        pids = [executor.submit_to(i, os.getpid).result() for i in (0, 1, 0)]
    finally:
        executor.shutdown()
    assert pids[0] == pids[2] != pids[1]
