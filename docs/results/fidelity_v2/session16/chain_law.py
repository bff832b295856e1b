"""Session 16: does a transform block's serial step grow with the arithmetic of one item?

Fits `trace_law.output_law`'s rows for a transform (output by default) on the H200 trace sample in three forms
and prints each one's coefficients and median per-launch error by Winograd variant:
  one step    fixed + steps x step + n x FLOPs / (eff x peak) + m x bytes / rate   (the committed law)
  chain       ... + steps x item FLOPs x c   (a thread's dependent arithmetic per round)
  loads       the step scaled by the item's loads, (m + 2)^2 / 36
  by variant  a step of its own for F(2), F(4), F(6)
Usage: python chain_law.py [output|input] [SAMPLE]
"""
import sys

import numpy as np

import megasim.app.calibrate.trace_law as tl
from megasim.contract.problem import Op
from megasim.contract.transforms import transform_flops

CLOCK, PEAK = 1979.494, 256.0


def law_rows(op, path):
    """(terms, work cycles, weights, (case, launch) tags, problems) of `trace_law.output_law`'s least squares."""
    meta, traces = tl.load_sample(path)
    rows = {}

    def capture(xs, ys, ws, tags):
        rows.update(xs=np.array(xs), ys=np.array(ys), ws=np.array(ws), tags=tags)
        return np.zeros(4), {}
    real = tl._fit_blocks
    tl._fit_blocks = capture
    try:
        tl.output_law(meta, traces, CLOCK, PEAK, op=op)
    finally:
        tl._fit_blocks = real
    return rows["xs"], rows["ys"], rows["ws"], rows["tags"], meta


def main():
    op = Op.INPUT_TRANSFORM if sys.argv[1:2] == ["input"] else Op.OUTPUT_TRANSFORM
    path = sys.argv[2] if len(sys.argv) > 2 else "scenarios/calibrations/raw/h200_trace_sample.npz"
    x, y, w, tags, meta = law_rows(op, path)
    real = tl._fit_blocks
    variant = np.array([meta[c].get("variant", 4) for c, _ in tags])
    per_item = {m: (transform_flops(m).output_per_tile_channel if op == Op.OUTPUT_TRANSFORM
                    else transform_flops(m).input_per_tile_channel) for m in (2, 4, 6)}
    item = np.array([per_item[v] for v in variant], float)
    forms = {"one step": x,
             "chain": np.column_stack([x, x[:, 1] * item]),
             "loads": np.column_stack([x[:, :1], x[:, 1] * np.array([{2: 16, 4: 36, 6: 64}[v] for v in variant]) / 36,
                                       x[:, 2:]]),
             "by variant": np.column_stack([x[:, :1], *(x[:, 1] * (variant == v) for v in (2, 4, 6)), x[:, 2:]])}
    for name, cols in forms.items():
        coef, errors = real(cols, y, w, tags)
        rel = cols @ coef / y - 1
        launches = {}
        for t, v in zip(tags, variant):
            launches[t] = v
        by = {v: [abs(e) for t, e in errors.items() if launches[t] == v] for v in (2, 4, 6)}
        print(f"{name:11s} coef {np.round(coef, 4).tolist()}")
        print(f"            block |err| median {np.median(np.abs(rel)):.3f}; launch |median err| "
              + ", ".join(f"F({v}) {np.median(e):.3f} (n={len(e)})" for v, e in by.items() if e)
              + f"; all {np.median(np.abs(list(errors.values()))):.3f}")


if __name__ == "__main__":
    main()
