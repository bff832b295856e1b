"""Input-transform block rows from a trace sample, for trying block laws: per block its work (cycles), serial
steps, issued FLOPs, bytes moved, and overlap-weighted counts of working blocks: on its SM of each type, and
on the chip of each type. Writes an .npz.

    python docs/results/fidelity_v2/session13/input_rows.py OUT.npz [SAMPLE]
"""
import sys
import numpy as np
from megasim.app.calibrate.trace_law import graph_of, load_sample, overlap
from megasim.contract.problem import Op
from megasim.contract.work import issued_flops, serial_steps

meta, traces = load_sample(sys.argv[2] if len(sys.argv) > 2 else "scenarios/calibrations/raw/h200_trace_sample.npz")
rng = np.random.default_rng(0)
cols = {k: [] for k in ("work", "steps", "flops", "bytes", "sm_in", "sm_gemm", "sm_out", "sm_wait",
                        "chip_in", "chip_gemm", "chip_out", "case", "fused")}
for ci, (case, problem) in enumerate(meta.items()):
    g = graph_of(problem); flops, steps = issued_flops(g), serial_steps(g); moved = sum(g.bytes_per_task())
    for launch, rec in traces[case].items():
        op, sm, st, rd, en, task = (rec[k] for k in ("op", "sm", "start_us", "ready_us", "end_us", "task"))
        ins = np.where(op == Op.INPUT_TRANSFORM)[0]
        picked = rng.choice(ins, 600, replace=False) if len(ins) > 600 else ins
        for j in picked[en[picked] > rd[picked]]:
            a, b = rd[j], en[j]; here = sm == sm[j]
            cols["work"].append((b - a) * 1979.494); cols["steps"].append(steps[task[j]])
            cols["flops"].append(flops[task[j]]); cols["bytes"].append(moved[task[j]])
            for o, name in ((Op.INPUT_TRANSFORM, "in"), (Op.GEMM, "gemm"), (Op.OUTPUT_TRANSFORM, "out")):
                s = op == o
                cols[f"sm_{name}"].append(overlap(a, b, rd[here & s], en[here & s]))
                cols[f"chip_{name}"].append(overlap(a, b, rd[s], en[s]))
            cols["sm_wait"].append(overlap(a, b, st[here], rd[here]))
            cols["case"].append(ci); cols["fused"].append(launch == "fused")
np.savez(sys.argv[1], names=np.array(list(meta)), **{k: np.array(v) for k, v in cols.items()})
