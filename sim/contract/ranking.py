"""Rank correlation and regret: how the calibration report, the search evaluation and the dispatch-order
microbenchmark each say whether two orderings agree, and what trusting the predicted one costs."""
from __future__ import annotations

import numpy as np


def ranks(x) -> np.ndarray:
    """Ranks from 0, ties sharing their average rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(len(x), dtype=np.float64)
    _, inv = np.unique(x, return_inverse=True)
    sums, counts = np.bincount(inv, weights=r), np.bincount(inv)
    return (sums / counts)[inv]


def spearman(a, b) -> float:
    """Spearman's rho: the Pearson correlation of the ranks; NaN when either side is constant."""
    ra, rb = ranks(a), ranks(b)
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def regret(pick_us: float, measured_us) -> float:
    """The regret of a pick: its measured time over the fastest of `measured_us` (which holds it), minus 1.
    0 when the predicted fastest is the measured fastest."""
    return pick_us / min(measured_us) - 1
