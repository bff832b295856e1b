"""The fastest FP32-accurate build of each paper layer against cuDNN's fastest strict-FP32 algorithm, from
`megasim bench --precision all` files, FP32 builds alone and with 3xTF32, every ratio from one call.

    python docs/results/bench_h200/precision/table.py [DIR]     # default: this folder's bench_*.json

Accurate means `bench_best.run_refusal` accepts the run (within its variant's tolerance; a 3xTF32 run also
within `FP32_BOUND` and `TWIN_RATIO` times its FP32 twin's error), so the pick is bench's own
(`best_fused`, `best_nonfused`), and `fastest_baseline` is the one bench wrote.
"""
import json
import math
import sys
from pathlib import Path

from megasim.app.bench_best import fastest_accurate


def best(entry: dict, precisions: tuple[str, ...]):
    """(key, median us, rel err) of the fastest accurate run, fused or not, at one of `precisions`."""
    picks = [fastest_accurate(dict(entry, precisions=list(precisions)), launch) for launch in ("fused", "nonfused")]
    key, _, us, check = min((p for p in picks if p), key=lambda p: p[2])
    return key, us, check["rel_err"]


def rows(folder: Path) -> list[dict]:
    out = []
    for path in sorted(folder.glob("bench_*.json")):
        for entry in json.loads(path.read_text())["layers"]:
            base = entry["fastest_baseline"]
            fp32_key, fp32_us, _ = best(entry, ("fp32",))
            key, us, err = best(entry, tuple(entry["precisions"]))
            accurate = sum(v["accepted"] for v in entry.get("fp32_accuracy", {}).values())
            out.append({"layer": entry["layer"]["name"], "fp32_key": fp32_key, "fp32_us": fp32_us, "key": key,
                        "us": us, "err": err, "baseline": base["name"], "baseline_us": base["median_us"],
                        "baseline_err": base["rel_err"], "accepted": accurate,
                        "tf32_runs": len(entry.get("fp32_accuracy", {}))})
    return out


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main(folder: Path) -> None:
    table = rows(folder)
    print("| layer | best FP32 µs | best µs (run) | cuDNN µs (algorithm) | FP32 x cuDNN | best x cuDNN | "
          "error, best / cuDNN |")
    print("|---|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r['layer']} | {r['fp32_us']:.1f} | {r['us']:.1f} (`{r['key']}`) | {r['baseline_us']:.1f} "
              f"({r['baseline'].removeprefix('cudnn:')}) | {r['baseline_us'] / r['fp32_us']:.2f} | "
              f"{r['baseline_us'] / r['us']:.2f} | {r['err']:.1e} / {r['baseline_err']:.1e} |")
    wins = sum(r["baseline_us"] > r["us"] for r in table)
    print(f"\n{len(table)} layers: geomean {geomean(r['baseline_us'] / r['fp32_us'] for r in table):.3f}x cuDNN "
          f"with FP32 builds alone, {geomean(r['baseline_us'] / r['us'] for r in table):.3f}x with 3xTF32; "
          f"faster than cuDNN on {wins} of {len(table)}; 3xTF32 runs meeting the FP32 rule: "
          f"{sum(r['accepted'] for r in table)} of {sum(r['tf32_runs'] for r in table)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
