"""Fit `neighbour_slowdown` by indirect inference (session 15): the matrix whose simulated per-block slopes match
the traced ones.

    python docs/results/fidelity_v2/session15/indirect.py PROFILE MODEL_JSON [ROUNDS [SAME_TYPE_OPS]]

`company.py`'s regression (a block's work against the other blocks working on its SM, by type) run on the fused
launches of the trace sample and on the same cases simulated under PROFILE with MODEL_JSON; each round moves every
entry of the matrix by the traced slope less the simulated one. The regression's slopes mix the SM's sharing with
what the chip does around it (DRAM contention differs between a launch's head and its middle), so reading the
traced slopes straight into the matrix would count the chip's part twice: the model's own slopes carry that part.
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from company import TYPES, company_rows, fit, simulated  # noqa: E402
from megasim.app.calibrate.trace_law import load_sample  # noqa: E402
from megasim.contract.problem import OP_NAMES, Op  # noqa: E402

SAMPLE = "scenarios/calibrations/raw/h200_trace_sample.npz"
FITTED = {Op.INPUT_TRANSFORM: (Op.GEMM, Op.OUTPUT_TRANSFORM), Op.GEMM: (Op.INPUT_TRANSFORM, Op.OUTPUT_TRANSFORM),
          Op.OUTPUT_TRANSFORM: (Op.INPUT_TRANSFORM, Op.GEMM)}  # same-type sharing stays the kernels' own laws


def slopes(traces) -> dict:
    fused = {c: {"fused": launches["fused"]} for c, launches in traces.items()}
    rows = company_rows(fused, cap=1500)
    return {t: dict(zip(TYPES, fit(rows[t])[0])) for t in FITTED}


def main(profile, model, rounds=3, same=""):
    """`same`: task types (comma separated) whose same-type entry is fitted too (a type whose FP32 is unshared)."""
    for t in Op:
        if OP_NAMES[t] in same.split(","):
            FITTED[t] = (*FITTED[t], t)
    meta, traces = load_sample(SAMPLE)
    target = slopes(traces)
    model = json.loads(model)
    if "neighbour_slowdown" not in model:
        from megasim.app.calibrate.profile import load_profile
        model["neighbour_slowdown"] = load_profile(profile).model.get("neighbour_slowdown", {})
    matrix = model["neighbour_slowdown"]
    for r in range(int(rounds) + 1):
        got = slopes(simulated(meta, profile, model))
        gap = {t: {u: target[t][u] - got[t][u] for u in us} for t, us in FITTED.items()}
        print(f"round {r}: matrix {json.dumps(matrix)}")
        for t, us in FITTED.items():
            print(f"  {OP_NAMES[t]:17s} " + "  ".join(f"{OP_NAMES[u][:5]} traced {target[t][u]:+.3f} model "
                                                       f"{got[t][u]:+.3f}" for u in us))
        if r == int(rounds):
            break
        for t, us in FITTED.items():
            row = matrix.setdefault(OP_NAMES[t], {})
            for u in us:
                row[OP_NAMES[u]] = round(max(-0.5, row.get(OP_NAMES[u], 0.0) + gap[t][u]), 3)
    print(json.dumps(model))


if __name__ == "__main__":
    main(*sys.argv[1:])
