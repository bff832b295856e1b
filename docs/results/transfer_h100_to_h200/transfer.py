"""Transfer: fit on the H100's runs plus only the H200's microbenchmarks, then predict the H200's runs.

    python docs/results/transfer_h100_to_h200/transfer.py [JOBS]

Stage 1 (hardware: clock, bandwidths, atomics, dispatch) comes from the H200's microbenchmarks, the part
a user can measure on a new GPU in a minute. Stages 2 and 3 (compute efficiencies, block overhead, usable
L2) come from the H100's 168 runs. The profile is then validated against the H200's own 168 runs, which it
never saw. Writes `transfer_h200.toml`, `transfer_summary.json` and the report `transfer.md` here.
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

from megasim.app.calibrate.run import fit_profile, raw_paths, validate_profile
from megasim.app.catalog import SCENARIOS

HERE = Path(__file__).resolve().parent
RAW = SCENARIOS / "calibrations" / "raw"


def main(jobs: int = 2) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        mixed = raw_paths(tmp, "h200")
        shutil.copy(raw_paths(RAW, "h200")["micro"], mixed["micro"])
        shutil.copy(raw_paths(RAW, "h100")["runs"], mixed["runs"])
        fit_profile("h200", tmp, HERE / "transfer_h200.toml", jobs=jobs, sharing="jobs")
    with tempfile.TemporaryDirectory() as out:
        summary = validate_profile(HERE / "transfer_h200.toml", raw_paths(RAW, "h200")["runs"], out_dir=out,
                                   jobs=jobs, report=HERE / "transfer.md")
        tidy_report(Path(out))
    (HERE / "transfer_summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return summary


def tidy_report(out: Path) -> None:
    """The report's figures beside it, its paths relative to the repository, its links from this folder."""
    shutil.copytree(out / "figures", HERE / "figures", dirs_exist_ok=True)
    report = HERE / "transfer.md"
    text = report.read_text().replace(str(HERE.parents[2]) + "/", "")
    report.write_text(text.replace("(calibration-analysis.md)", "(../../calibration-analysis.md)"))


if __name__ == "__main__":
    s = main(int(sys.argv[1]) if sys.argv[1:] else 2)
    print(json.dumps(s["mape"], indent=1))
