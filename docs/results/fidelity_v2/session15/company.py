"""Transform and GEMM blocks' work against the blocks working beside them on their SM, by type (session 15).

    python docs/results/fidelity_v2/session15/company.py [SAMPLE [PROFILE [MODEL_JSON]]]

For every block of the trace sample: its work (ready to end, us) and the overlap-weighted count of the *other*
blocks working on its SM, per task type. Fits, per task type, work = T1[case, launch] x (1 + sum_t a_t x n_t)
by least squares on log work: how much each neighbour type slows it, with each launch's lone work free. With a
PROFILE, the same of the sample's cases simulated under it, its model overridden by MODEL_JSON.
"""
import json
import sys

import numpy as np
from scipy.optimize import least_squares

from megasim.app.calibrate.trace_law import load_sample
from megasim.contract.problem import OP_NAMES, Op

TYPES = (Op.FILTER_TRANSFORM, Op.INPUT_TRANSFORM, Op.GEMM, Op.OUTPUT_TRANSFORM)


def company_rows(traces, cap=3000, seed=0):
    """{op: list of (group, work, counts by TYPES)} over every case and launch."""
    rng = np.random.default_rng(seed)
    out = {op: [] for op in TYPES}
    for case, launches in traces.items():
        for launch, rec in launches.items():
            op, sm, rd, en = rec["op"], rec["sm"], rec["ready_us"], rec["end_us"]
            by_sm = {s: np.flatnonzero(sm == s) for s in np.unique(sm)}
            for t in TYPES:
                js = np.flatnonzero((op == t) & (en > rd))
                if len(js) > cap:
                    js = rng.choice(js, cap, replace=False)
                for j in js:
                    i = by_sm[sm[j]]
                    i = i[i != j]
                    a, b = rd[j], en[j]
                    share = np.clip(np.minimum(en[i], b) - np.maximum(rd[i], a), 0, None) / (b - a)
                    counts = [float(share[op[i] == u].sum()) for u in TYPES]
                    out[t].append((f"{case}/{launch}", b - a, counts))
    return out


def fit(rows):
    groups = sorted({g for g, _, _ in rows})
    gi = np.array([groups.index(g) for g, _, _ in rows])
    y = np.log([w for _, w, _ in rows])
    n = np.array([c for _, _, c in rows])

    def resid(p):
        return p[gi] + np.log1p(n @ p[len(groups):]) - y
    p0 = np.concatenate([[np.median(y[gi == k]) for k in range(len(groups))], np.full(len(TYPES), 0.1)])
    r = least_squares(resid, p0, bounds=(np.r_[np.full(len(groups), -np.inf), np.full(len(TYPES), -0.2)], np.inf))
    return r.x[len(groups):], float(np.sqrt(np.mean(r.fun ** 2))), float(np.sqrt(np.mean((y - np.array([np.median(y[gi == k]) for k in gi])) ** 2)))


def simulated(meta, profile_path, model=None):
    """The sample's cases run under a profile (its model overridden by `model`), as traces:
    {case: {"fused": rec, "nonfused": rec}}."""
    from megasim.app.calibrate.predict import graph_of, mapping_of
    from megasim.app.calibrate.profile import load_profile
    from megasim.app.calibrate.replay_check import RUN_KEYS
    from megasim.app.catalog import load_gpu
    from megasim.contract.interpreter import RunConfig
    from megasim.engine.interpreter import SimpyInterpreter
    profile = load_profile(profile_path)
    sim = SimpyInterpreter(profile.apply(load_gpu(profile.gpu)).with_model(**(model or {})))
    out = {}
    for case, m in meta.items():
        run = {k: m[k] for k in RUN_KEYS if k in m}
        fused = sim.run(graph_of(run), mapping_of(run), RunConfig(mode=m.get("mode", "static"))).records
        nonfused = sim.run(graph_of(run), None, RunConfig(launch="nonfused")).records
        out[case] = {k: {f: r[f] for f in ("op", "sm", "ready_us", "end_us")} for k, r in
                     (("fused", fused), ("nonfused", nonfused))}
    return out


def main(path="scenarios/calibrations/raw/h200_trace_sample.npz", profile=None, model=None):
    meta, traces = load_sample(path)
    if profile:
        traces = simulated(meta, profile, json.loads(model) if model else None)
    rows = company_rows(traces)
    print("per extra working block on the SM, by its type: " + ", ".join(OP_NAMES[t] for t in TYPES))
    for t in TYPES:
        for name, keep in (("all", lambda g: True), ("fused", lambda g: g.endswith("/fused")),
                           ("nonfused", lambda g: g.endswith("/nonfused"))):
            sel = [r for r in rows[t] if keep(r[0])]
            if len(sel) < 50:
                continue
            a, rms, rms0 = fit(sel)
            mean = np.mean([c for _, _, c in sel], axis=0)
            print(f"{OP_NAMES[t]:17s} {name:8s} n={len(sel):6d} a=[" + " ".join(f"{x:+.3f}" for x in a)
                  + f"] rms {rms:.3f} (no company {rms0:.3f}); mean company [" + " ".join(f"{x:.2f}" for x in mean) + "]")


if __name__ == "__main__":
    main(*sys.argv[1:])
