"""Every build `megasim bench` timed on the paper layers, as one raw calibration file.

    python docs/results/bench_h200/to_raw.py --gpu h200   # writes scenarios/calibrations/raw/<gpu>_builds.json

Reads this folder's `bench_<layer>.json`, and `space_sweep_<gpu>.json` where it exists (the builds of the
decision space bench does not time: `space_sweep.py`), and writes one row per timed build: the layer, its partition and
mapping, the build (`megasim.contract.build.Build`: launch, variant, mode, GEMM body) and its median time. A
non-fused build's time is its graph-captured launch sequence (`nonfused-graph`, `nonfused-warp-graph-f6`, ...).
A layer is held out where the calibration runs hold it out whole
(ResNet-3, VGG-2, YOLOv3-2), so the warp body's laws, fitted on the training layers, are judged on these.
"""
import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[2] / "scenarios" / "calibrations" / "raw"
HELDOUT = ("ResNet-3", "VGG-2", "YOLOv3-2")


def parse(key: str, main: int):
    """(launch, variant, mode, gemm) of a bench timing key, or None for a key that is not a build (the raw-blockIdx
    run, the non-fused kernels timed one by one): bench's own inverse, `bench_best.parse_build_key`."""
    from megasim.app.bench_best import parse_build_key
    return parse_build_key(key, main)


def main(gpu: str) -> None:
    rows, header = [], None
    for path in sorted(HERE.glob("bench_*.json")):
        doc = json.loads(path.read_text())
        header = header or doc["header"]
        for entry in doc["layers"]:
            for key, timing in entry["timings"].items():
                build = parse(key, entry["variant"])
                if build is None or not timing or timing.get("median_us") is None:
                    continue
                check = entry["checks"].get(key, {})
                if check.get("nan_count"):
                    continue
                launch, variant, mode, gemm = build
                part = entry.get("gemm_partitions", {}).get(key, entry["partition"])
                rows.append({"layer": entry["layer"], "partition": part, "strategy": entry["mapping"]["strategy"],
                             "params": entry["mapping"]["params"], "launch": launch, "variant": variant,
                             "mode": mode, "gemm": gemm, "us": round(timing["median_us"], 3),
                             "split": "heldout" if entry["layer"]["name"] in HELDOUT else "train"})
    sweep = HERE / f"space_sweep_{gpu}.json"
    swept = {}
    if sweep.exists():
        doc = json.loads(sweep.read_text())
        swept = {k: doc["header"].get(k) for k in ("device", "git_commit", "kernel_build", "date_utc")}
        rows += [{k: v for k, v in r.items() if k not in ("rel_err", "drift")} for r in doc["builds"]
                 if not r["drift"] and r["us"] is not None]
    out = {"header": {k: header[k] for k in ("device", "git_commit", "kernel_build", "date_utc", "reps")}
           | {"source": "docs/results/bench_h200/bench_<layer>.json and space_sweep_<gpu>.json (the builds bench "
                        "does not time), by docs/results/bench_h200/to_raw.py"} | ({"space_sweep": swept} if swept else {}),
           "builds": rows}
    target = RAW / f"{gpu}_builds.json"
    target.write_text(json.dumps(out, indent=0) + "\n")
    print(f"{len(rows)} builds of {len({r['layer']['name'] for r in rows})} layers -> {target}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpu", default="h200", help="the GPU the bench files were measured on")
    main(parser.parse_args().gpu)
