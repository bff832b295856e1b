"""The engine's predictions on the 13 paper layers, recorded so a faster engine can be held to them.

    python docs/results/engine_speed/equivalence.py          # rewrites equivalence.json
    python docs/results/engine_speed/equivalence.py --check  # re-runs all 26, prints the largest deviation

Each entry is what `megasim simulate --layer L --gpu G --json` prints as `fused_us` and `nonfused_us`
(default mapping, partition and policy; h200 under the H200 profile committed when they were recorded,
`h200_profile_at_recording.toml`, passed as `--profile` since the committed one moved on (2026-11-25),
and v100 its datasheet spec). `tests/sim/test_engine_equivalence.py` re-runs them and
asserts every one within 0.5%: the engine's hot path was rewritten for speed (from commit 4aab740), and that rewrite may
move no prediction by more than the quantum's rounding already does.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
from pathlib import Path

from megasim.app.catalog import layer_names
from megasim.app.cli import main as cli_main

HERE = Path(__file__).resolve().parent
DATA = HERE / "equivalence.json"
GPUS = ("h200", "v100")
PROFILES = {"h200": ["--profile", str(HERE / "h200_profile_at_recording.toml")], "v100": []}


def predict(layer: str, gpu: str) -> dict:
    """`megasim simulate --layer LAYER --gpu GPU --json`, in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli_main(["simulate", "--layer", layer, "--gpu", gpu, "--json", *PROFILES[gpu]])
    if rc:
        raise RuntimeError(f"megasim simulate --layer {layer} --gpu {gpu} exited {rc}")
    run = json.loads(out.getvalue())
    return {"layer": layer, "gpu": gpu, "num_tbs": run["num_tbs"], "fused_us": run["fused_us"],
            "nonfused_us": run["nonfused_us"]}


def check() -> float:
    """Re-run every recorded pair; print each deviation and return the largest (relative)."""
    worst = 0.0
    for rec in json.loads(DATA.read_text())["runs"]:
        now = predict(rec["layer"], rec["gpu"])
        dev = [abs(now[k] / rec[k] - 1) for k in ("fused_us", "nonfused_us")]
        worst = max(worst, *dev)
        print(f"{rec['layer']:9s} {rec['gpu']}: fused {dev[0]:.4%}, non-fused {dev[1]:.4%}")
    print(f"largest deviation {worst:.4%}")
    return worst


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="compare with equivalence.json instead of rewriting it")
    if p.parse_args(argv).check:
        check()
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    rows = [predict(layer, gpu) for gpu in GPUS for layer in layer_names()]
    DATA.write_text(json.dumps({"recorded_at_commit": commit, "tolerance": 0.005, "runs": rows}, indent=1) + "\n")
    print(f"wrote {DATA} ({len(rows)} layer/GPU pairs, commit {commit})")


if __name__ == "__main__":
    main()
