"""Held-out corpus fused runs under two profiles, shape by shape: which shapes a model change moves, and which way.

    python corpus_diff.py PROFILE_A PROFILE_B [OUT.json]
"""
import json, sys
from pathlib import Path
import numpy as np
from megasim.app.calibrate.corpus_eval import predict_corpus
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.run import raw_paths
from megasim.app.catalog import load_gpu

CORPUS = raw_paths("scenarios/calibrations/raw", "h200")["corpus"]


def rows_of(path):
    spec = load_profile(path).apply(load_gpu("h200"))
    return predict_corpus(CORPUS, spec, jobs=2, splits=("heldout",), shown=False)


a, b = rows_of(sys.argv[1]), rows_of(sys.argv[2])
if len(sys.argv) > 3:
    Path(sys.argv[3]).write_text(json.dumps({"a": a, "b": b}))
shapes = {}
for x, y in zip(a, b):
    shapes.setdefault(x["shape"], []).append((x, y))
print(f"{'shape':28s} mode        | meas us | A err | B err")
ea, eb = [], []
for shape, pairs in shapes.items():
    for x, y in pairs:
        m = x["fused_us"]
        da, db = x["pred_fused_us"] / m - 1, y["pred_fused_us"] / m - 1
        ea.append(abs(da)); eb.append(abs(db))
        if abs(db) - abs(da) > 0.03:
            print(f"{shape:28s} {x['mode']:10s} {x['strategy'][:6]:6s}| {m:7.1f} | {da:+6.1%} | {db:+6.1%}")
print(f"fused MAPE A {np.mean(ea):.2%}  B {np.mean(eb):.2%}  ({len(ea)} runs)")
