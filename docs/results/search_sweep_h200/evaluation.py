"""How well the simulator picks: its ranking of a grid against an exhaustive hardware sweep.

`python docs/results/search_sweep_h200/evaluation.py docs/results/search_sweep_h200/search_sweep_h200.json`
predicts every swept point on the simulator (the calibrated spec when a
profile exists) and, per layer, reports:

- where the simulator's top-5 fall in the measured ranking (1 = fastest);
- the regret of its pick: measured(pick) / measured best - 1;
- the regret after measuring its top 5 and keeping the fastest;
- the hardware runs needed to get within `tolerance` (3%) of the measured
  best by running its candidates in predicted order, and the runs that saves
  against measuring the whole grid.

`analyse` is pure arithmetic over two {point key: microseconds} tables, so
it is tested on synthetic data.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from megasim.io.writing import write_then_rename
from megasim.contract.ranking import regret, spearman
from megasim.app.search.runner import point_key


def analyse(measured: dict, predicted: dict, top: int = 5, tolerance: float = 0.03) -> dict:
    """Compare one layer's measured and predicted times over the same points (keys)."""
    keys = sorted(set(measured) & set(predicted))
    if not keys:
        raise ValueError("no point is both measured and predicted")
    by_measured = sorted(keys, key=lambda k: (measured[k], k))
    by_predicted = sorted(keys, key=lambda k: (predicted[k], k))
    measured_rank = {k: i + 1 for i, k in enumerate(by_measured)}
    best = measured[by_measured[0]]
    runs_needed = next(i + 1 for i, k in enumerate(by_predicted) if measured[k] <= (1 + tolerance) * best)
    top_keys = by_predicted[:top]
    return {
        "points": len(keys),
        "measured_best_us": best,
        "measured_best": by_measured[0],
        "sim_pick": by_predicted[0],
        "sim_pick_measured_us": measured[by_predicted[0]],
        "sim_top_measured_ranks": [measured_rank[k] for k in top_keys],
        "regret_pick": regret(measured[by_predicted[0]], [measured[k] for k in keys]),
        f"regret_best_of_top{top}": regret(min(measured[k] for k in top_keys), [measured[k] for k in keys]),
        "runs_to_within_tolerance": runs_needed,
        "tolerance": tolerance,
        "runs_saved": len(keys) - runs_needed,
        "spearman": spearman([measured_rank[k] for k in keys],
                             [by_predicted.index(k) + 1 for k in keys]),
    }


def tables(sweep: dict) -> dict[str, dict]:
    """layer -> {point key: measured fused us} from a hardware_sweep file."""
    out: dict[str, dict] = {}
    for r in sweep["rows"]:
        if r.get("measured_fused_us"):
            out.setdefault(r["layer"], {})[point_key(r["point"])] = r["measured_fused_us"]
    return out


def predict(sweep: dict, gpu_name: str, uncalibrated: bool = False, jobs: int = 1) -> dict[str, dict]:
    """layer -> {point key: predicted fused us} for every swept point, simulated here."""
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.contract.problem import Partition, WinogradVariant
    from megasim.app.catalog import load_layer
    from megasim.app.search.objective import Problem, evaluate
    from megasim.app.search.pool import local_executor
    gpu, _ = gpu_for_simulation(gpu_name, uncalibrated)
    ex = local_executor(jobs)
    futures = []
    for r in sweep["rows"]:
        problem = Problem(load_layer(r["layer"]), WinogradVariant(4), gpu)  # fused, static, generic: as swept
        futures.append((r, ex.submit(evaluate, problem, Partition.from_dict(r["partition"]), r["point"])))
    out: dict[str, dict] = {}
    for r, fut in futures:
        out.setdefault(r["layer"], {})[point_key(r["point"])] = fut.result()["time_us"]
    ex.shutdown()
    return out


def format_report(results: dict[str, dict], top: int = 5) -> str:
    head = (f"| layer | points | measured best (us) | sim pick measured (us) | regret of pick | "
            f"sim top-{top} measured ranks | regret best of top-{top} | runs to within 3% | runs saved | Spearman |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for layer, a in results.items():
        lines.append(f"| {layer} | {a['points']} | {a['measured_best_us']:.1f} | {a['sim_pick_measured_us']:.1f} | "
                     f"{100 * a['regret_pick']:.1f}% | {', '.join(map(str, a['sim_top_measured_ranks']))} | "
                     f"{100 * a[f'regret_best_of_top{top}']:.1f}% | {a['runs_to_within_tolerance']} | "
                     f"{a['runs_saved']} | {a['spearman']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python docs/results/search_sweep_h200/evaluation.py", description=__doc__.splitlines()[0])
    p.add_argument("sweep", help="a hardware_sweep.py JSON (search_sweep_<gpu>.json)")
    p.add_argument("--gpu", default=None, help="spec to predict with (default: the sweep header's gpu)")
    p.add_argument("--uncalibrated", action="store_true")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", help="analysis JSON (default: beside the sweep, *_analysis.json)")
    args = p.parse_args(argv)
    path = Path(args.sweep)
    try:
        sweep = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        print(f"evaluation: error: {path}: {exc}", file=sys.stderr)
        return 2
    gpu = args.gpu or sweep.get("header", {}).get("gpu", "h200")
    measured, predicted = tables(sweep), predict(sweep, gpu, args.uncalibrated, args.jobs)
    results = {layer: analyse(measured[layer], predicted[layer]) for layer in measured}
    out = Path(args.out or path.with_name(path.stem + "_analysis.json"))
    with write_then_rename(out) as tmp:
        tmp.write_text(json.dumps({"sweep": str(path), "gpu": gpu, "layers": results}, indent=1))
    print(format_report(results))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
