"""GEMM blocks' waits (start to ready) per SM, traced against simulated, for ResNet-1 under D_IG = 128, 196, 512, 0.

    python docs/results/fidelity_v2/session11/gemm_waits.py PROFILE...

Sums of every block's wait and work over the launch, divided by the SM count (us of slot time per SM), and the
90th percentile of a GEMM's and an output's wait, from the H200 trace sample and from each profile's run of the
same problem (docs/calibration-analysis.md, session 11, finding 6).
"""
import sys, numpy as np
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter
from pathlib import Path
RAW = Path("scenarios/calibrations/raw")
meta, tr = load_sample(RAW / "h200_trace_sample.npz")
profiles = {p: load_profile(p).apply(load_gpu("h200")) for p in sys.argv[1:]}
def stats(rec, n_sm=132):
    st, rd, en, op = rec["start_us"], rec["ready_us"], rec["end_us"], rec["op"]
    span = en.max() - st.min()
    wait = rd - st; work = en - rd
    out = {"span": span}
    for o, name in ((2, "gemm"), (3, "out")):
        s = op == o
        out[f"{name}_wait_sum"] = wait[s].sum() / n_sm   # us of slot-time per SM
        out[f"{name}_wait_p90"] = np.percentile(wait[s], 90)
    out["busy_work"] = work.sum() / n_sm
    out["busy_wait"] = wait.sum() / n_sm
    return out
for case in ("ResNet-1-dig128", "ResNet-1-dig196", "ResNet-1", "ResNet-1-dig0"):
    about = meta[case]; run = {k: about[k] for k in RUN_KEYS if k in about}
    g, m = graph_of(run), mapping_of(run)
    rows = {"trace": stats(tr[case]["fused"])}
    for p, spec in profiles.items():
        rows[p.split("/")[-2] if "/" in p else p] = stats(SimpyInterpreter(spec).run(g, m, RunConfig()).records)
    print(case, about["params"])
    for k, v in rows.items():
        print(f"   {k:14s} " + " ".join(f"{a}={b:7.1f}" for a, b in v.items()))
