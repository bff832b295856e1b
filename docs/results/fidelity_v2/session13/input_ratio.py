"""Input-transform blocks, traced (H200 sample) against a profile: per case and launch, the median work of the
lone blocks (no other block working on their SM) and of all blocks, model over trace.

    python docs/results/fidelity_v2/session13/input_ratio.py PROFILE [PATCH_ARGS]
"""
import sys
import numpy as np
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.engine.interpreter import SimpyInterpreter


def lone_mask(rec):
    op, sm, rd, en = rec["op"], rec["sm"], np.asarray(rec["ready_us"], float), np.asarray(rec["end_us"], float)
    idx = np.where(op == Op.INPUT_TRANSFORM)[0]
    out = np.zeros(len(idx), bool)
    for n, j in enumerate(idx):
        q = (sm == sm[j]) & (np.arange(len(op)) != j)
        ov = np.clip(np.minimum(en[q], en[j]) - np.maximum(rd[q], rd[j]), 0, None).sum()
        out[n] = ov < 0.3 * (en[j] - rd[j])
    return idx, out


def medians(rec):
    idx, lone = lone_mask(rec)
    w = (np.asarray(rec["end_us"], float) - np.asarray(rec["ready_us"], float))[idx]
    return np.median(w), (np.median(w[lone]) if lone.sum() >= 5 else np.nan)


if __name__ == "__main__":
    meta, tr = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    spec = load_profile(sys.argv[1]).apply(load_gpu("h200"))
    rows = []
    for case in meta:
        run = {k: meta[case][k] for k in RUN_KEYS if k in meta[case]}
        for launch in ("fused", "nonfused"):
            cfg = RunConfig(mode=run.get("mode", "static")) if launch == "fused" else RunConfig(launch="nonfused")
            ex = SimpyInterpreter(spec).run(graph_of(run), mapping_of(run) if launch == "fused" else None, cfg)
            (ta, tl), (ma, ml) = medians(tr[case][launch]), medians(ex.records)
            rows.append((case, launch, ma / ta, ml / tl, ta, tl))
            print(f"{case:28s} {launch:8s} all {ma / ta:5.2f} (trace {ta:6.1f})  lone {ml / tl:5.2f} (trace {tl:6.1f})", flush=True)
    for launch in ("fused", "nonfused"):
        r = np.array([x[2:4] for x in rows if x[1] == launch], float)
        print(f"{launch}: model/trace median all {np.nanmedian(r[:, 0]):.3f}  lone {np.nanmedian(r[:, 1]):.3f}")
