"""In what order the blocks of a kernel's first wave end on an SM: what the law `first_wave_stagger` reads.

Blocks that start together on an SM do not end together: a warp scheduler issues the oldest ready warp,
so the block that arrived first ends first (three GEMM blocks started within 0.05 us end at 79, 88 and
102 us). The order matters more than the times: the first block to end on every SM ends before any SM's
second, so the blocks after the first wave spread one per SM (docs/decisions.md, "The non-fused GEMM's first
wave is staggered"; docs/results/trace_sample/h100/end_ranks.txt).
"""
from __future__ import annotations

import numpy as np

from megasim.contract.problem import Op

FIRST_WAVE_US = 1.0  # blocks that start within this of a launch's first are its first wave


def end_ranks(rec, op: Op = Op.GEMM) -> tuple[np.ndarray, int]:
    """Median duration (us) of `op`'s first-wave blocks by end rank on their SM, over the SMs that hold the
    most of them, and the first wave's size."""
    m = rec["op"] == op
    start, end, sm = rec["start_us"][m], rec["end_us"][m], rec["sm"][m]
    first = start < start.min() + FIRST_WAVE_US
    per_sm = [np.sort(end[first & (sm == k)] - start[first & (sm == k)]) for k in np.unique(sm[first])]
    full = max(len(d) for d in per_sm)
    return np.median([d for d in per_sm if len(d) == full], axis=0), int(first.sum())


def stagger_reading(meta: dict, traces: dict) -> float:
    """Half the median spread, (last - first) / mean, of the first wave's durations by end rank over the
    sample's non-fused GEMM launches in the static mode with two or more blocks an SM: the work factor
    1 +- this that makes equal shares end as far apart (rounded to 0.01)."""
    spreads = []
    for case, about in meta.items():
        if about.get("mode", "static") != "static" or "nonfused" not in traces[case]:
            continue
        ranks, _ = end_ranks(traces[case]["nonfused"])
        if len(ranks) >= 2:
            spreads.append((ranks[-1] - ranks[0]) / ranks.mean())
    return round(float(np.median(spreads)) / 2, 2) if spreads else 0.0
