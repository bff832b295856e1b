"""Per held-out corpus shape: measured margin, and per study folder its predicted margin and fused / non-fused errors; X marks a wrong call.

    python docs/results/fidelity_v2/session11/misses.py FOLDER... (folders written by `megasim validate --corpus --out FOLDER`)
"""
import json, sys
def calls(d):
    rows = [r for r in json.load(open(f"{d}/results/calibration/corpus_predictions_h200.json"))["rows"] if r["split"] == "heldout"]
    shapes = {}
    for r in rows: shapes.setdefault(r["shape"], []).append(r)
    out = {}
    for s, runs in shapes.items():
        b = min(runs, key=lambda r: r["fused_us"])
        out[s] = (b["nonfused_us"] / b["fused_us"] - 1, b["pred_nonfused_us"] / b["pred_fused_us"] - 1,
                  b["pred_fused_us"] / b["fused_us"] - 1, b["pred_nonfused_us"] / b["nonfused_us"] - 1)
    return out
ds = sys.argv[1:]
cs = [calls(d) for d in ds]
print(f"{'shape':28s} {'meas':>6s} " + " ".join(f"{d.split('/')[-1][:14]:>24s}" for d in ds))
for s in sorted(cs[0], key=lambda s: cs[0][s][0]):
    m = cs[0][s][0]
    cells = []
    for c in cs:
        _, p, ef, en = c[s]
        bad = abs(m) > 0.03 and (m > 0) != (p > 0)
        cells.append(f"{p:+6.1%}{'X' if bad else ' '} f{ef:+5.1%} n{en:+5.1%}")
    print(f"{s:28s} {m:+6.1%} " + " ".join(cells))
