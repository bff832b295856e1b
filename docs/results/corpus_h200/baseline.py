"""How the committed model does on the generated corpus it was never fitted on: the fidelity issue's baseline.

    python docs/results/corpus_h200/baseline.py [GPU...]      # default h200 h100; writes baseline_<gpu>.json

Every corpus run (`scenarios/calibrations/raw/<gpu>_corpus.jsonl`: per shape two mappings x static and
persistent, and the non-fused graph) is predicted under the committed profile of its GPU. Reported per
split (train / held-out shapes; the profile saw neither): fused and non-fused MAPE, the fused-vs-non-fused
call on each shape's measured-best fused run, and the MAPE on a few slices (batch 1, C = 3, each variant).
"""
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[2] / "scenarios" / "calibrations" / "raw"


def _predict(job):
    from megasim.app.calibrate.predict import predict_fused, predict_nonfused
    line, spec = job
    runs = line["runs"]
    nonfused = predict_nonfused(runs[0], spec)[0] if runs else None
    return [{**{k: r[k] for k in ("strategy", "params", "fused_us", "nonfused_us", "variant", "layer", "mode")},
             "split": line["split"], "shape": line["shape"], "pred_fused_us": predict_fused(r, spec),
             "pred_nonfused_us": nonfused} for r in runs]


def _mape(pred, meas):
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    return float(np.mean(np.abs(pred / meas - 1))) if len(meas) else float("nan")


def summary(rows):
    out = {}
    shapes = {}
    for r in rows:
        shapes.setdefault(r["shape"], []).append(r)
    for split in ("train", "heldout"):
        part = [r for r in rows if r["split"] == split]
        per_shape = [v for v in shapes.values() if v[0]["split"] == split]
        calls = []
        for runs in per_shape:
            best = min(runs, key=lambda r: r["fused_us"])
            measured = best["nonfused_us"] / best["fused_us"] - 1
            predicted = best["pred_nonfused_us"] / best["pred_fused_us"] - 1
            calls.append((measured, predicted))
        decided = [(m, p) for m, p in calls if abs(m) > 0.03]
        out[split] = {
            "shapes": len(per_shape), "runs": len(part),
            "fused_mape": _mape([r["pred_fused_us"] for r in part], [r["fused_us"] for r in part]),
            "nonfused_mape": _mape([v[0]["pred_nonfused_us"] for v in per_shape], [v[0]["nonfused_us"] for v in per_shape]),
            "winner_right_where_margin_over_3pct": f"{sum((m > 0) == (p > 0) for m, p in decided)} of {len(decided)}",
            "margin_within_3_points": f"{sum(abs(m - p) <= 0.03 for m, p in calls)} of {len(calls)}",
            "predicts_fusion_wins": sum(p > 0 for _, p in calls), "measured_fusion_wins": sum(m > 0 for m, _ in calls)}
    slices = {"batch 1": lambda r: r["layer"]["n"] == 1, "C = 3": lambda r: r["layer"]["c"] == 3,
              "F(2)": lambda r: r["variant"] == 2, "F(4)": lambda r: r["variant"] == 4, "F(6)": lambda r: r["variant"] == 6,
              "persistent": lambda r: r["mode"] == "persistent"}
    out["fused_mape_by_slice"] = {k: _mape(*zip(*[(r["pred_fused_us"], r["fused_us"]) for r in rows if f(r)]))
                                  for k, f in slices.items()}
    return out


def main(gpus):
    from megasim.app.calibrate.profile import load_profile, profile_path
    from megasim.app.catalog import load_gpu
    for gpu in gpus:
        spec = load_profile(profile_path(gpu)).apply(load_gpu(gpu))
        lines = [json.loads(l) for l in (RAW / f"{gpu}_corpus.jsonl").read_text().splitlines() if l.strip()]
        with ProcessPoolExecutor(2) as pool:
            rows = [r for part in pool.map(_predict, [(l, spec) for l in lines if l["runs"]]) for r in part]
        doc = {"gpu": gpu, "summary": summary(rows), "rows": rows}
        (HERE / f"baseline_{gpu}.json").write_text(json.dumps(doc, indent=1))
        print(gpu, json.dumps(doc["summary"], indent=1))


if __name__ == "__main__":
    main(sys.argv[1:] or ["h200", "h100"])
