"""Session 16: a transform block's traced work per round, by variant and by its company, in the non-fused launches
of the H200 trace sample. Usage: python rounds.py [output|input] [SAMPLE]"""
import sys

import numpy as np

import megasim.app.calibrate.trace_law as tl
from megasim.contract.problem import Op

op = Op.INPUT_TRANSFORM if sys.argv[1:2] == ["input"] else Op.OUTPUT_TRANSFORM
meta, traces = tl.load_sample(sys.argv[2] if len(sys.argv) > 2 else "scenarios/calibrations/raw/h200_trace_sample.npz")
print("case                            F  thr  blocks steps  KB/blk | work us: n<1.5 / 1.5-2.5 / >2.5 | us per round (n<1.5)")
for case, problem in sorted(meta.items(), key=lambda kv: kv[1].get("variant", 4)):
    g = tl.graph_of(problem)
    rec = traces[case]["nonfused"]
    sm, rd, en, task = rec["sm"], rec["ready_us"], rec["end_us"], rec["task"]
    idx = np.where(rec["op"] == op)[0]
    rb, wb = g.bytes_per_task()
    n = np.array([tl.overlap(rd[j], en[j], rd[idx][sm[idx] == sm[j]], en[idx][sm[idx] == sm[j]]) for j in idx])
    work = en[idx] - rd[idx]
    steps = g.serial_steps[task[idx]]
    cols = [np.median(work[m]) if m.any() else np.nan for m in (n < 1.5, (n >= 1.5) & (n < 2.5), n >= 2.5)]
    lone = n < 1.5
    per = np.median(work[lone] / steps[lone]) if lone.any() else np.nan
    print(f"{case:31s} {problem.get('variant', 4)} {problem['partition']['threads']:4d} {len(idx):6d} {np.median(steps):5.0f} "
          f"{np.median((rb + wb)[task[idx]]) / 1e3:7.0f} | {cols[0]:6.2f} / {cols[1]:6.2f} / {cols[2]:6.2f} | {per:.3f}")
