"""CUDA-event timing shared by every measurement: warm up, then time each call alone, report the median."""
from __future__ import annotations

import math

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


def rotation_set_count(cp, layer, l2_multiple: float, max_sets: int) -> int:
    """How many (x, w, y) sets (2 to `max_sets`) together exceed `l2_multiple` x this device's L2.

    `time_launches` rotating over that many never finds a call's inputs left in L2 by the last one.
    """
    l2 = cp.cuda.Device().attributes["L2CacheSize"]
    return min(max_sets, max(2, math.ceil(l2_multiple * l2 / layer.min_dram_bytes)))


def rotation_inputs(cp, layer, seed: int, nsets: int | None = None, l2_multiple: float = 2.0, max_sets: int = 16):
    """Random NHWC inputs and KRSC filters with NaN-poisoned outputs, `nsets` sets of each.

    By default, `rotation_set_count` sets.
    """
    if nsets is None:
        nsets = rotation_set_count(cp, layer, l2_multiple, max_sets)
    rng = cp.random.RandomState(seed)
    xs = [rng.standard_normal((layer.n, layer.h, layer.w, layer.c), dtype=cp.float32) for _ in range(nsets)]
    ws = [rng.standard_normal((layer.k, 3, 3, layer.c), dtype=cp.float32) for _ in range(nsets)]
    ys = [cp.full((layer.n, layer.h, layer.w, layer.k), cp.nan, dtype=cp.float32) for _ in range(nsets)]
    return xs, ws, ys
