"""CUDA-event timing shared by every measurement: warm up, then time each call alone, report the median."""
from __future__ import annotations

import numpy as np


def time_launches(cp, launch, nsets: int, reps: int, warmup: int = 3, stream=None) -> dict:
    """Median and p10/p90 of `reps` calls of `launch(i)`, each between its own pair of events.

    `launch` takes the index of the input set to use; calls rotate over `nsets` sets so that
    consecutive calls do not find their inputs in L2.
    """
    stream = stream or cp.cuda.get_current_stream()
    for i in range(warmup):
        launch(i % nsets)
    starts = [cp.cuda.Event() for _ in range(reps)]
    ends = [cp.cuda.Event() for _ in range(reps)]
    for i in range(reps):
        starts[i].record(stream)
        launch((warmup + i) % nsets)
        ends[i].record(stream)
    ends[-1].synchronize()
    us = np.array([cp.cuda.get_elapsed_time(s, e) * 1e3 for s, e in zip(starts, ends)])
    return {"median_us": float(np.median(us)), "p10_us": float(np.percentile(us, 10)),
            "p90_us": float(np.percentile(us, 90)), "reps": reps, "rotation_sets": nsets}
