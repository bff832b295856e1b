"""The winner's curse in the fused-vs-non-fused call: the fused side of a call is the fastest of a layer's predicted
mappings, so its error is the most negative of several, not a typical one.

Per paper layer: the pick's predicted / measured fused time against the layer's median ratio; then the same for
the corpus's held-out shapes (the fastest predicted of four runs).

    python pick_bias.py [PROFILE]
"""
import json, sys
import numpy as np
from megasim.app.calibrate.corpus_eval import by_shape, predict_corpus
from megasim.app.calibrate.metrics import by_layer, simulators_pick
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.run import raw_paths
from megasim.app.calibrate.validate import predict_runs
from megasim.app.catalog import load_gpu

RAW = raw_paths("scenarios/calibrations/raw", "h200")
prof = sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml"
spec = load_profile(prof).apply(load_gpu("h200"))
runs = json.loads(RAW["runs"].read_text())["runs"]
rows = predict_runs(runs, spec, shown=False)


def report(groups, title):
    print(title)
    print(f"{'layer':28s} | pick pred/meas | median of all | pick - median | nf pred/meas")
    gaps = []
    for name, rs in sorted(groups.items()):
        ratio = [r["pred_fused_us"] / r["fused_us"] for r in rs]
        pick = simulators_pick(rs)
        p = pick["pred_fused_us"] / pick["fused_us"]
        gaps.append(np.log(p / np.median(ratio)))
        print(f"{name:28s} | {p:14.3f} | {np.median(ratio):13.3f} | {gaps[-1]:+13.3f} | "
              f"{pick['pred_nonfused_us'] / pick['nonfused_us']:.3f}")
    print(f"median gap {np.median(gaps):+.3f}, mean {np.mean(gaps):+.3f} over {len(gaps)}\n")


report(by_layer(rows), "paper layers (13 mappings each)")
corpus = predict_corpus(RAW["corpus"], spec, splits=("heldout",), shown=False)
report(by_shape(corpus), "held-out corpus shapes (4 runs each)")
