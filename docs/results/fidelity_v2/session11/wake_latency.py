"""How long a waiting block takes to notice its last parent: traced against simulated.

    python docs/results/fidelity_v2/session11/wake_latency.py PROFILE CASE...

For each block whose last parent ended after the block started (it had to wait), the time from that parent's end
to the block's ready, and how long it waited before it, in the H200 trace sample and in PROFILE's run of each
CASE; then the traced wake latency of every static case, binned by the wait before it
(docs/calibration-analysis.md, session 11, finding 6).
"""
import sys, numpy as np
from pathlib import Path
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.graph import NO_COUNTER
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter
meta, tr = load_sample(Path("scenarios/calibrations/raw/h200_trace_sample.npz"))
spec = load_profile(sys.argv[1]).apply(load_gpu("h200"))
def wake(g, rec):
    task, st, rd, en = rec["task"], rec["start_us"], rec["ready_us"], rec["end_us"]
    done = np.zeros(len(g.counter_init))
    sig = g.signals[task]; has = sig != NO_COUNTER
    np.maximum.at(done, sig[has], en[has])
    w = g.waits_on[task]
    last = np.full(len(task), -np.inf)
    for k in range(w.shape[1]):
        c = w[:, k]; h = c != NO_COUNTER
        last[h] = np.maximum(last[h], done[c[h]])
    blocked = last > st
    return blocked, (rd - last)[blocked], (last - st)[blocked]
for case in sys.argv[2:]:
    about = meta[case]; run = {k: about[k] for k in RUN_KEYS if k in about}
    g, m = graph_of(run), mapping_of(run)
    for label, rec in (("trace", tr[case]["fused"]), ("sim", SimpyInterpreter(spec).run(g, m, RunConfig()).records)):
        b, lat, spin = wake(g, rec)
        print(f"{case:18s} {label:5s} blocked {b.sum():5d} of {len(b)}  wake latency after last parent: median {np.median(lat):5.2f} p90 {np.percentile(lat,90):5.2f} us | spin before it: median {np.median(spin):5.2f} p90 {np.percentile(spin,90):5.2f} sum/SM {spin.sum()/132:6.1f}")
print("--- wake latency by spin duration (trace, all static fused cases)")
lat_all, spin_all = [], []
for case, about in meta.items():
    if about.get("mode", "static") != "static": continue
    run = {k: about[k] for k in RUN_KEYS if k in about}
    g = graph_of(run)
    b, lat, spin = wake(g, tr[case]["fused"])
    lat_all.append(lat); spin_all.append(spin)
lat, spin = np.concatenate(lat_all), np.concatenate(spin_all)
for lo, hi in ((0, 0.25), (0.25, 0.5), (0.5, 1), (1, 2), (2, 4), (4, 8), (8, 16), (16, 1e9)):
    s = (spin >= lo) & (spin < hi)
    if s.sum(): print(f"  spin {lo:5.2f}-{hi:5.2f} us: n {s.sum():6d} wake median {np.median(lat[s]):5.2f} p10 {np.percentile(lat[s],10):5.2f} p90 {np.percentile(lat[s],90):5.2f}")
