"""GEMM block work beside working input transforms, traced (H200 sample): is a GEMM slower while an input transform
works on its SM? For each fused GEMM block, f = the fraction of its work (ready to end) during which at least one
input transform worked on its SM; the median work of the blocks with f < 0.1 and with f > 0.5, and the number of
GEMM blocks working beside it (overlap-weighted), so the two groups can be told apart by sharing as well.

    python docs/results/fidelity_v2/session12/gemm_beside_inputs.py [CASE...]
"""
import sys
import numpy as np
from megasim.app.calibrate.trace_law import load_sample, overlap
from megasim.contract.problem import Op

meta, traces = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
cases = sys.argv[1:] or ["ResNet-1-dig128", "ResNet-1-dig196", "ResNet-1", "ResNet-2", "ResNet-3", "VGG-1", "YOLOv3-3"]
rng = np.random.default_rng(0)
print("| case | GEMM blocks with f < 0.1: n, median work us, GEMM co-runners | f > 0.5: n, median work, co-runners |")
print("|---|---|---|")
for case in cases:
    rec = traces[case]["fused"]
    op, sm, rd, en = rec["op"], rec["sm"], rec["ready_us"].astype(float), rec["end_us"].astype(float)
    gemms = np.where(op == Op.GEMM)[0]
    gemms = rng.choice(gemms, min(3000, len(gemms)), replace=False)
    rows = []
    for j in gemms:
        a, b = rd[j], en[j]
        if b <= a:
            continue
        q = sm == sm[j]
        ins = np.where(q & (op == Op.INPUT_TRANSFORM))[0]
        cuts = np.unique(np.clip(np.concatenate([rd[ins], en[ins], [a, b]]), a, b))
        busy = sum(hi - lo for lo, hi in zip(cuts[:-1], cuts[1:])
                   if ((rd[ins] <= (lo + hi) / 2) & (en[ins] > (lo + hi) / 2)).any())
        g = np.where(q & (op == Op.GEMM))[0]
        rows.append((busy / (b - a), b - a, overlap(a, b, rd[g], en[g])))
    r = np.array(rows)
    lo, hi = r[r[:, 0] < 0.1], r[r[:, 0] > 0.5]
    cell = lambda s: f"{len(s)}, {np.median(s[:, 1]):.2f}, {np.median(s[:, 2]):.2f}" if len(s) else "0"
    print(f"| {case} | {cell(lo)} | {cell(hi)} |")
