"""Resident blocks over time, waiting and working per task type, traced (H200 sample) against a profile's run.

    python docs/results/fidelity_v2/session13/timeline.py PROFILE CASE [BIN_US]

Each row is one time bin; a cell is the mean number of blocks per SM that were resident and waiting (w) or
working (k), input transforms and GEMMs, then outputs working.
"""
import sys
import numpy as np
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter

meta, tr = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
spec = load_profile(sys.argv[1]).apply(load_gpu("h200"))
case = sys.argv[2]; step = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
run = {k: meta[case][k] for k in RUN_KEYS if k in meta[case]}
model = SimpyInterpreter(spec).run(graph_of(run), mapping_of(run), RunConfig()).records


def occupancy(rec, edges):
    st, rd, en, op = (np.asarray(rec[k], float) for k in ("start_us", "ready_us", "end_us")), None, None, rec["op"]
    st, rd, en = st
    t0 = st.min(); st, rd, en = st - t0, rd - t0, en - t0
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        row = []
        for o in (1, 2, 3):
            s = op == o
            wait = np.clip(np.minimum(rd[s], b) - np.maximum(st[s], a), 0, None).sum() / (b - a) / 132
            work = np.clip(np.minimum(en[s], b) - np.maximum(rd[s], a), 0, None).sum() / (b - a) / 132
            row += [wait, work]
        out.append(row)
    return np.array(out), en.max()


span = max(tr[case]["fused"]["end_us"].max() - tr[case]["fused"]["start_us"].min(), model["end_us"].max())
edges = np.arange(0, span + step, step)
t, tspan = occupancy(tr[case]["fused"], edges)
m, mspan = occupancy(model, edges)
print(f"{case} {meta[case]['params']}  span traced {tspan:.1f} us, model {mspan:.1f} us")
print("   bin | traced: in w/k  gemm w/k  out w/k | model: in w/k  gemm w/k  out w/k")
for i, a in enumerate(edges[:-1]):
    f = lambda r: " ".join(f"{r[j]:4.1f}/{r[j+1]:<4.1f}" for j in (0, 2, 4))
    print(f"{a:6.0f} | {f(t[i])} | {f(m[i])}")
tot = lambda r: (r * step).sum(axis=0)
print("totals us/SM | " + " ".join(f"{x:6.1f}" for x in tot(t)) + " | " + " ".join(f"{x:6.1f}" for x in tot(m)))
