"""How well each model of the H100 decides, on the same measurements: every build of the paper layers
(`h100_builds.json`) and of the held-out corpus shapes (`h100_corpus_builds.json`).

    python docs/results/calibrate_h100/decisions.py scenarios/calibrations/raw docs/results/calibrate_h100 [--jobs 2]

The models, each predicting the builds whose precision it can (a model without the 3xTF32 law, FP32 only):
- `datasheet`: scenarios/gpus/h100.toml, no calibration (`simulate --uncalibrated`);
- `spec_only`: the spec `calibrate --spec-only` writes from the H100's own microbenchmarks (`h100_micro.json`),
  no fitted constants;
- `stale`: the profile fitted on 2026-11-25 (kernel build b34bca5d15f6, three laws), read from git
  (`git show fad54a6:scenarios/calibrations/h100.toml`);
- `calibrated`: scenarios/calibrations/h100.toml, fitted from this folder's run.
Writes OUT/decisions.json (per model and data set: MAPE over every build, the pick's regret, the fused-vs-non-fused
calls) and prints a table.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
STALE_COMMIT = "fad54a6"


def models(raw: Path, tmp: Path) -> dict:
    from megasim.app.calibrate.profile import load_profile, profile_path
    from megasim.app.calibrate.spec_writer import write_spec
    from megasim.app.catalog import load_gpu
    spec_file = write_spec("h100", raw / "h100_micro.json", tmp / "h100.toml")
    stale = tmp / "stale_h100.toml"
    stale.write_bytes(subprocess.run(["git", "show", f"{STALE_COMMIT}:scenarios/calibrations/h100.toml"],
                                     cwd=HERE, capture_output=True, check=True).stdout)
    out = {"datasheet": load_gpu("h100"), "spec_only": load_gpu(str(spec_file))}
    for name, path in (("stale", stale), ("calibrated", profile_path("h100"))):
        profile = load_profile(path)
        out[name] = profile.apply(profile.base_spec())
    return out


def main() -> int:
    from megasim.app.calibrate.builds import decision_summary, pick_rows, precision_of, predictable, predicted
    from megasim.app.calibrate.measurements import load_builds
    p = argparse.ArgumentParser()
    p.add_argument("raw", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    data = {k: load_builds(args.raw / f"h100_{k}.json")[1] for k in ("builds", "corpus_builds")
            if (args.raw / f"h100_{k}.json").exists()}
    result = {}
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as pool:
        for name, spec in models(args.raw, Path(tmp)).items():
            for kind, rows in data.items():
                known = predictable(rows, spec)
                built = predicted(known, spec, pool)
                fp32 = [r for r in built if precision_of(r) == "fp32"]
                fp32_measured = [r for r in rows if precision_of(r) == "fp32"]
                result[f"{name}/{kind}"] = {"every_build": decision_summary(built, rows),
                                            "fp32_builds": decision_summary(fp32, fp32_measured),
                                            "picks": pick_rows(built, rows),
                                            "unpredicted": len(rows) - len(known)}
                print(f"{name}/{kind} done", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "decisions.json").write_text(json.dumps(result, indent=1) + "\n")
    print("| model / data | builds predicted | MAPE | pick regret, mean / worst | clear calls right |")
    print("|---|---|---|---|---|")
    for key, r in result.items():
        d = r["every_build"]
        print(f"| {key} | {d['builds']} of {d['builds'] + r['unpredicted']} | {d['mape']:.1%} | "
              f"{d['regret_mean']:.1%} / {d['regret_worst']:.1%} | {d['clear_calls_right']} of {d['clear_calls']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
