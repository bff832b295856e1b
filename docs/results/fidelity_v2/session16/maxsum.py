"""Session 16: does a transform block's FP32 work add to its memory work, or overlap it?

Fits the trace sample's transform block law (`chain_law.law_rows`: latency fixed + steps x step, FP32 share
n x FLOPs / (eff x peak), memory share m x bytes / rate) in three forms by least squares on relative error:
latency plus the sum of the two shares (the committed law), plus the larger of them (the engine's overlap), and
plus their 3-norm. Usage: python maxsum.py [output|input] [SAMPLE]
"""
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).parent))
from chain_law import law_rows  # noqa: E402

from megasim.contract.problem import Op  # noqa: E402


def predict(p, x, form):
    latency = p[0] + p[1] * x[:, 1]
    fp, memory = p[2] * x[:, 2], p[3] * x[:, 3]
    if form == "sum":
        return latency + fp + memory
    if form == "max":
        return latency + np.maximum(fp, memory)
    return latency + (fp ** 3 + memory ** 3) ** (1 / 3)


def main():
    op = Op.INPUT_TRANSFORM if sys.argv[1:2] == ["input"] else Op.OUTPUT_TRANSFORM
    x, y, w, tags, _ = law_rows(op, sys.argv[2] if len(sys.argv) > 2 else
                                "scenarios/calibrations/raw/h200_trace_sample.npz")
    scale = np.array([900, 570, 2.5, 0.00027])
    for form in ("sum", "max", "pnorm3"):
        fit = least_squares(lambda q: (predict(q * scale, x, form) - y) * w, np.ones(4), bounds=(0, np.inf))
        p = fit.x * scale
        rel = predict(p, x, form) / y - 1
        launches: dict = {}
        for t, e in zip(tags, rel):
            launches.setdefault(t, []).append(e)
        per_launch = np.median([abs(np.median(v)) for v in launches.values()])
        print(f"{form:7s} coef {np.round(p, 5).tolist()}  block |err| median {np.median(np.abs(rel)):.3f}  "
              f"launch |median err| {per_launch:.3f}")


if __name__ == "__main__":
    main()
