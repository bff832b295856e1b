"""Predicted against measured for the corpus-modes runs: where the model's fused error sits, by mode and mapping.

    python docs/results/corpus_modes_h200/residuals.py [PROFILE] [--split heldout|train|all] [--jobs N]

PROFILE defaults to the committed H200 profile. The predictions go to `predictions_<profile stem>.json`
beside this script; the table printed last is measured / predicted (geometric mean and the spread of the
log ratio) for each (mapping, mode), the fused MAPE, and how often the model ranks the mode-mapping pairs
of a shape the way the hardware does.
"""
import argparse
import collections
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def table(rows: list[dict]) -> list[str]:
    groups = collections.defaultdict(list)
    for r in rows:
        key = f"{r['strategy']} {'/'.join(str(v) for v in r['params'].values())} {r['mode']}"
        groups[key].append(np.log(r["fused_us"] / r["pred_fused_us"]))
    out = ["| mapping, mode | runs | measured / predicted (geomean) | spread of log ratio (sd) | MAPE |",
           "|---|---|---|---|---|"]
    for key, logs in sorted(groups.items()):
        logs = np.array(logs)
        out.append(f"| {key} | {len(logs)} | {np.exp(logs.mean()):.3f} | {logs.std():.3f} | "
                   f"{np.mean(np.abs(np.exp(-logs) - 1)):.1%} |")
    return out


def ranking(rows: list[dict]) -> str:
    from scipy.stats import spearmanr
    shapes = collections.defaultdict(list)
    for r in rows:
        shapes[r["shape"]].append((r["fused_us"], r["pred_fused_us"]))
    rho = [spearmanr(*zip(*v)).statistic for v in shapes.values() if len(v) > 2]
    best = [min(v)[0] / min(v, key=lambda t: t[1])[0] for v in shapes.values()]
    return (f"within-shape Spearman over the 12 runs: median {np.median(rho):.2f}, >= 0.9 on {sum(r >= 0.9 for r in rho)} "
            f"of {len(rho)} shapes; the model's pick is within 2% of the measured best on "
            f"{sum(b >= 1 / 1.02 for b in best)} of {len(best)} shapes (worst {1 / min(best) - 1:.1%} slower)")


def main() -> None:
    from megasim.app.calibrate.corpus_eval import predict_corpus
    from megasim.app.calibrate.profile import load_profile, profile_path
    from megasim.app.catalog import load_gpu
    ap = argparse.ArgumentParser()
    ap.add_argument("profile", nargs="?", default=str(profile_path("h200")))
    ap.add_argument("--split", default="heldout", choices=("heldout", "train", "all"))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    profile = load_profile(args.profile)
    spec = profile.apply(load_gpu(profile.gpu))
    splits = ("heldout", "train") if args.split == "all" else (args.split,)
    rows = predict_corpus(HERE / "h200_corpus_modes.jsonl", spec, jobs=args.jobs, splits=splits)
    out = HERE / f"predictions_{Path(args.profile).stem}_{args.split}.json"
    out.write_text(json.dumps({"profile": args.profile, "split": args.split, "rows": rows}, indent=1))
    print("\n".join(table(rows)))
    print(ranking(rows))
    print(f"fused MAPE {np.mean([abs(r['pred_fused_us'] / r['fused_us'] - 1) for r in rows]):.1%} over {len(rows)} runs; "
          f"wrote {out}")


if __name__ == "__main__":
    main()
