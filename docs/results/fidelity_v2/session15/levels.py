"""Per case and task type of the trace sample's fused launches: the median block work (ready to end, us), traced
against simulated under a profile (session 15): where the law's levels, not its slopes, are off.

    python docs/results/fidelity_v2/session15/levels.py PROFILE [MODEL_JSON]
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from company import simulated  # noqa: E402
from megasim.app.calibrate.trace_law import load_sample  # noqa: E402
from megasim.contract.problem import OP_NAMES, Op  # noqa: E402


def main(profile, model=None, sample="scenarios/calibrations/raw/h200_trace_sample.npz"):
    meta, traces = load_sample(sample)
    sim = simulated(meta, profile, json.loads(model) if model else None)
    logs = {op: [] for op in Op}
    print(f"{'case':28s} " + " ".join(f"{OP_NAMES[o][:12]:>20s}" for o in Op) + "   launch traced/sim")
    for case in meta:
        cells = []
        for op in Op:
            t, s = (np.median((r["end_us"] - r["ready_us"])[r["op"] == op]) for r in
                    (traces[case]["fused"], sim[case]["fused"]))
            logs[op].append(np.log(s / t))
            cells.append(f"{t:8.1f}/{s:8.1f} {s / t:4.2f}")
        span = [r["end_us"].max() - r["ready_us"].min() for r in (traces[case]["fused"], sim[case]["fused"])]
        print(f"{case:28s} " + " ".join(cells) + f"   {span[0]:7.1f}/{span[1]:7.1f} {span[1] / span[0]:4.2f}")
    print("geomean sim/traced: " + ", ".join(f"{OP_NAMES[o]} {np.exp(np.mean(v)):.3f}" for o, v in logs.items()))


if __name__ == "__main__":
    main(*sys.argv[1:])
