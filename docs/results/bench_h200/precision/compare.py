"""What the simulator says of each paper layer's builds beside what bench measured: the gain 3xTF32 gives a
layer, and the build each picks.

    python docs/results/bench_h200/precision/compare.py [OUT]     # any CPU, a few minutes; default: this folder

For each `bench_<layer>.json` here, `megasim simulate --layer L --gpu h200 --all-builds --json` ranks the same
builds bench timed (the committed H200 profile, with its `tensor_core_gemm` law; the default mapping bench
used). Per layer:
- the gain of 3xTF32: the fastest FP32 build's time over the fastest build's, predicted and measured (bench's
  accurate runs only); they agree when within 5 points (`tensor_law.WITHIN`);
- the simulator's pick, its measured time, and its regret against the fastest build bench measured;
- per twin pair (a warp build and its 3xTF32 twin), the predicted and measured gain, and how many agree.
Writes OUT/compare.json and prints a markdown table.
"""
import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from megasim.app.bench_best import accurate_runs, build_key, split_precision
from megasim.app.calibrate.tensor_law import WITHIN
from megasim.contract.build import Build

HERE = Path(__file__).resolve().parent


def predicted(layer: str) -> dict:
    """Build key -> predicted us, from the CLI's own ranking."""
    out = subprocess.run([sys.executable, "-m", "megasim.app.cli", "simulate", "--layer", layer, "--gpu", "h200",
                          "--all-builds", "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["builds"]


def keyed(builds: list[dict], main_variant: int) -> dict[str, float]:
    fields = ("launch", "variant", "mode", "gemm", "precision")
    return {build_key(Build(**{f: b[f] for f in fields if f in b}), main_variant): b["time_us"] for b in builds}


def measured(entry: dict) -> dict[str, float]:
    """Build key -> median us of every run bench accepted (`bench_best.accurate_runs`)."""
    return {key: us for launch in ("fused", "nonfused") for key, _, us, _ in accurate_runs(entry, launch)}


def layer_row(entry: dict, pred_builds: list[dict]) -> dict:
    pred = keyed(pred_builds, entry["variant"])
    meas = measured(entry)
    both = sorted(set(pred) & set(meas))
    fp32 = [k for k in both if split_precision(k)[1] == "fp32"]
    gain = {name: min(d[k] for k in fp32) / min(d[k] for k in both) - 1 for name, d in (("pred", pred), ("meas", meas))}
    pick = min(both, key=pred.get)
    best = min(both, key=meas.get)
    twins = []
    for k in both:
        base, precision = split_precision(k)
        if precision != "fp32" and base in both:
            twins.append({"build": k, "pred": pred[base] / pred[k] - 1, "meas": meas[base] / meas[k] - 1})
    return {"layer": entry["layer"]["name"], "builds": len(both), "gain_pred": gain["pred"], "gain_meas": gain["meas"],
            "agree": abs(gain["pred"] - gain["meas"]) <= WITHIN, "pick": pick, "pick_pred_us": pred[pick],
            "pick_meas_us": meas[pick], "best": best, "best_us": meas[best], "regret": meas[pick] / meas[best] - 1,
            "twins": twins, "twins_agree": sum(abs(t["pred"] - t["meas"]) <= WITHIN for t in twins)}


def main(out: Path) -> None:
    entries = [json.loads(p.read_text())["layers"][0] for p in sorted(HERE.glob("bench_*.json"))]
    with ThreadPoolExecutor(2) as pool:
        preds = list(pool.map(lambda e: predicted(e["layer"]["name"]), entries))
    rows = [layer_row(e, p) for e, p in zip(entries, preds)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("| layer | 3xTF32 gain % predicted / measured | simulator's pick | its µs predicted / measured | "
          "fastest measured | regret | twins within 5 pts |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['layer']} | {100 * r['gain_pred']:+.0f} / {100 * r['gain_meas']:+.0f}{'' if r['agree'] else ' (off)'} "
              f"| `{r['pick']}` | {r['pick_pred_us']:.1f} / {r['pick_meas_us']:.1f} | `{r['best']}` "
              f"{r['best_us']:.1f} | {100 * r['regret']:.1f}% | {r['twins_agree']} of {len(r['twins'])} |")
    regret = math.exp(sum(math.log1p(r["regret"]) for r in rows) / len(rows)) - 1
    twins = [t for r in rows for t in r["twins"]]
    print(f"\n3xTF32 gain within 5 points on {sum(r['agree'] for r in rows)} of {len(rows)} layers; twin pairs "
          f"{sum(r['twins_agree'] for r in rows)} of {len(twins)}; pick's regret geomean {100 * regret:.1f}%, "
          f"max {100 * max(r['regret'] for r in rows):.1f}%; pick's time MAPE "
          f"{100 * sum(abs(r['pick_pred_us'] / r['pick_meas_us'] - 1) for r in rows) / len(rows):.1f}%")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
