"""Stage 4b: the ready queue's pop law (`megasim.engine.laws.queue_pop`), from the ready-queue builds `bench`
measured whole (`<gpu>_builds.json`).

The calibration runs are static launches, so nothing in them says what a ready-queue pop costs. The builds
file times every paper layer in every mode; the law's two constants (a pop's latency and how long it holds
the queue's head) are fitted on the training layers' ready-queue builds of up to 40,000 tasks, generic GEMM
body, F(4) and F(6), on the log error of their time. The held-out layers and the F(2) builds judge them.
"""
from __future__ import annotations

import math

import numpy as np

from megasim.app.calibrate.builds import log_error, training_rows

EVALS = 24
START = ((300.0, 20.0), (1200.0, 20.0), (300.0, 80.0))  # (pop_cycles, pop_interval_cycles): a wide simplex


def fit_queue_law(rows: list[dict], spec, pool=None, log=print, evals: int = EVALS) -> tuple[dict, dict]:
    """({"laws": the model's laws and queue_pop, "queue_pop": its constants}, {"queue_pop": rms log error}), or
    ({}, {}) where the builds hold no training ready-queue build."""
    from scipy.optimize import minimize
    train = training_rows(rows, launch="fused", mode="ready_queue", gemm="generic")
    if not train:
        return {}, {}

    def law(x) -> dict:
        return {"pop_cycles": round(float(np.exp(x[0])), 1), "pop_interval_cycles": round(float(np.exp(x[1])), 2)}

    def error(x) -> float:
        return log_error(train, spec.with_model(queue_pop=law(x)), pool)

    start = np.log(START)
    best = minimize(error, x0=start[0], method="Nelder-Mead",
                    options={"maxfev": evals, "xatol": 0.02, "fatol": 1e-5, "initial_simplex": start})
    fitted = law(best.x)
    log(f"stage 4b (ready-queue pops, {len(train)} builds): {fitted}, rms log error {math.sqrt(best.fun):.3f}")
    return ({"laws": [x.name for x in spec.model.laws if x.name != "queue_pop"] + ["queue_pop"], "queue_pop": fitted},
            {"queue_pop": round(math.sqrt(best.fun), 4)})
