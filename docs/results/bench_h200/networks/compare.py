"""Measured network totals (`bench --network`) beside the simulator's (`simulate --network`), per network.

    python docs/results/bench_h200/networks/compare.py [RESULTS_DIR]

Prints one markdown row per network: fused and non-fused totals measured and predicted, the speedup both
ways, and on how many distinct layers the per-layer winner (fused or non-fused) is called right.
"""
import json
import sys
from pathlib import Path

NETWORKS = ("resnet34", "resnet50", "vgg16", "yolov3", "densenet161")


def row(results: Path, net: str) -> str | None:
    bench, sim = results / f"bench_{net}.json", results / f"simulate_{net}.json"
    if not (bench.exists() and sim.exists()):
        return None
    b, s = json.loads(bench.read_text()), json.loads(sim.read_text())
    bt, st = b["totals"], s["totals"]
    pairs = list(zip(b["layers"], s["layers"]))
    assert all(x["name"] == y["name"] for x, y in pairs), f"{net}: layer lists differ"
    right = sum((x["fused_us"] < x["nonfused_us"]) == (y["fused_us"] < y["nonfused_us"]) for x, y in pairs)
    f_err = st["fused_us"] / bt["fused_us"] - 1
    n_err = st["nonfused_us"] / bt["nonfused_us"] - 1
    return (f"| {b['network']} | {len(pairs)} | {bt['fused_us'] / 1e3:.2f} / {st['fused_us'] / 1e3:.2f} ({f_err:+.0%}) "
            f"| {bt['nonfused_us'] / 1e3:.2f} / {st['nonfused_us'] / 1e3:.2f} ({n_err:+.0%}) "
            f"| {bt['nonfused_us'] / bt['fused_us']:.3f}x / {st['nonfused_us'] / st['fused_us']:.3f}x "
            f"| {right} of {len(pairs)} |")


def main(results: Path) -> None:
    print("| network | distinct layers | fused ms, measured / predicted | non-fused ms, measured / predicted "
          "| fusion speedup, measured / predicted | per-layer winner right |")
    print("|---|---|---|---|---|---|")
    for net in NETWORKS:
        line = row(results, net)
        if line:
            print(line)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results")
