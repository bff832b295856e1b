"""Which raw file makes the profile from nothing worse on fused time: swap them into the committed raw one at a time.

    python docs/results/calibrate_from_nothing/attribute.py OUT [--jobs 2]

Each variant is the committed H200 raw folder (scenarios/calibrations/raw) with its corpus cut to the 32 shapes
the calibration from nothing measured (20 of them fitted), and then, in turn, one of that calibration's own raw
files in place of the committed one: its runs and microbenchmarks, its builds, its graph-timed kernels. Its trace
files were not kept, so they cannot be swapped. Each variant is fitted (`calibrate --from-raw`) and validated on the
committed held-out data (`validate`: 69 held-out runs, 46 held-out corpus shapes). About 6 minutes a variant on
two cores. Prints a table of held-out MAPE and writes OUT/attribute.json.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
COMMITTED = REPO / "scenarios" / "calibrations" / "raw"
FRESH = Path(__file__).resolve().parent / "raw"
VARIANTS = {"corpus cut to 32": [], "+ its runs and micro": ["h200_runs.json", "h200_micro.json"],
            "+ its builds": ["h200_builds.json"],
            "+ its graph-timed kernels": ["h200_kernel_graph_times.jsonl", "h200_kernel_graph_times_header.json"]}


def raw_folder(folder: Path, swaps: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in COMMITTED.glob("h200_*"):
        shutil.copy(path, folder / path.name)
    kept = {json.loads(line)["shape"] for line in (FRESH / "h200_corpus.jsonl").read_text().splitlines()}
    lines = (COMMITTED / "h200_corpus.jsonl").read_text().splitlines(keepends=True)
    (folder / "h200_corpus.jsonl").write_text("".join(line for line in lines if json.loads(line)["shape"] in kept))
    for name in swaps:
        shutil.copy(FRESH / name, folder / name)


def corpus_mape(report: Path) -> tuple[float, float]:
    text = report.read_text()
    return tuple(float(re.search(rf"\| {side} MAPE \| ([\d.]+)%", text)[1]) for side in ("fused", "non-fused"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--jobs", default="2")
    args = p.parse_args()
    cli = [sys.executable, "-m", "megasim.app.cli"]
    rows = {}
    for i, (name, swaps) in enumerate(VARIANTS.items()):
        raw, out = args.out / f"v{i}" / "raw", args.out / f"v{i}"
        raw_folder(raw, swaps)
        profile = out / "h200.toml"
        subprocess.run(cli + ["calibrate", "--gpu", "h200", "--from-raw", "--raw", str(raw), "--out", str(profile),
                              "--jobs", args.jobs], check=True, capture_output=True)
        done = subprocess.run(cli + ["validate", "--gpu", "h200", "--profile", str(profile), "--measurements",
                                     str(COMMITTED / "h200_runs.json"), "--out", str(out / "validate"), "--json",
                                     "--jobs", args.jobs], check=True, capture_output=True, text=True)
        doc = json.loads(done.stdout)
        rows[name] = {"runs": [round(doc["heldout_mape_fused"] * 100, 1), round(doc["heldout_mape_nonfused"] * 100, 1)],
                      "corpus": list(corpus_mape(out / "validate" / "calibration.md"))}
        print(name, rows[name], flush=True)
    (args.out / "attribute.json").write_text(json.dumps(rows, indent=1))
    print("| raw folder | held-out runs, fused / non-fused | held-out corpus, fused / non-fused |")
    print("|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['runs'][0]}% / {r['runs'][1]}% | {r['corpus'][0]}% / {r['corpus'][1]}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
