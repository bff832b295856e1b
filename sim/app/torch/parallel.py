"""Many shapes at once: each one's schedule made, and its kernel compiled, in a worker process.

A network brings a handful of convolution shapes, and each costs a
simulator search (seconds, more for large batches) and a CuPy compile (tens
of seconds) on first use. Done one layer at a time in the first forward,
that adds up to minutes; `prepare_shapes` gives each shape to a worker that
finds or searches its schedule and then compiles its build, largest shapes
first, so the longest search starts at once and a shape's compile does not
wait for the other shapes' searches. Compiles land in CuPy's disk cache
(`CUPY_CACHE_DIR`), keyed by source and options, so the process that later
builds the same `FusedConv` loads them instead of compiling. Workers are
spawned, never forked: the parent may hold a CUDA context (torch's), which
a forked child cannot use.
"""
from __future__ import annotations

import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from megasim.app.torch.schedules import Schedule, Schedules
from megasim.contract.errors import MegasimError


def default_workers() -> int:
    return max(1, min(16, (os.cpu_count() or 2) - 1))


def _job(args) -> dict:
    schedules, shape, gpu, layouts = args
    try:
        schedule = schedules.resolve(shape, gpu)
        if schedule.backend != "torch":
            from megasim.app.torch.plans import compile_build
            for layout in layouts:
                compile_build(schedule, layout)
    except MegasimError as exc:
        return {"error": str(exc)}
    return schedule.to_doc()


def prepare_shapes(schedules: Schedules, shapes, gpu: str, workers: int | None = None,
                   compile_kernels: bool = True, layouts=("nhwc",)) -> tuple[dict[tuple, Schedule], dict[tuple, str]]:
    """(shape -> schedule, shape -> why none) for every shape: from mapping files, the cache, or a
    search (which is cached), its build for each of `layouts` (or for the layouts a dict shape -> layouts
    names) compiled into CuPy's disk cache when `compile_kernels`."""
    shapes = sorted(dict.fromkeys(tuple(int(v) for v in s) for s in shapes), key=math.prod, reverse=True)
    per = layouts if isinstance(layouts, dict) else {s: layouts for s in shapes}
    jobs = [(schedules, s, gpu, tuple(per.get(s, ())) if compile_kernels else ()) for s in shapes]
    workers = min(len(shapes), workers or default_workers())
    if workers <= 1:
        docs = [_job(j) for j in jobs]
    else:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            docs = list(pool.map(_job, jobs))
    made = {s: Schedule.from_doc(d) for s, d in zip(shapes, docs) if "error" not in d}
    return made, {s: d["error"] for s, d in zip(shapes, docs) if "error" in d}


__all__ = ["prepare_shapes", "default_workers"]
