"""Transfer: fit on the H100's runs plus only the H200's microbenchmarks, then predict the H200's runs.

    python docs/results/transfer_h100_to_h200/transfer.py [JOBS]             # the jobs form (sessions 3-8)
    python docs/results/transfer_h100_to_h200/transfer.py JOBS resident      # the resident form (session 9)

Stage 1 (hardware: clock, bandwidths, atomics, dispatch) comes from the H200's microbenchmarks, the part
a user can measure on a new GPU in a minute. Stages 2 and 3 (compute efficiencies, block overhead, usable
L2) come from the H100's 168 runs. The profile is then validated against the H200's own 168 runs, which it
never saw. Writes `transfer_h200.toml`, `transfer_summary.json` and the report `transfer.md` here.

The resident form, as `megasim calibrate` now fits by default, also takes everything else from the H100:
its corpus runs, its ResNet-2 block trace (the per-task cost) and its per-block trace sample (the GEMM and
output laws), and is validated on the H200's runs and its held-out corpus shapes. It writes the same files
with `_resident` in their names.
"""
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from megasim.app.calibrate.run import fit_profile, raw_paths, validate_profile
from megasim.app.catalog import SCENARIOS

HERE = Path(__file__).resolve().parent
RAW = SCENARIOS / "calibrations" / "raw"


def main(jobs: int = 2, sharing: str = "jobs") -> dict:
    tag = "" if sharing == "jobs" else f"_{sharing}"
    profile, report = HERE / f"transfer{tag}_h200.toml", HERE / f"transfer{tag}.md"
    with tempfile.TemporaryDirectory() as tmp:
        mixed, h100 = raw_paths(tmp, "h200"), raw_paths(RAW, "h100")
        shutil.copy(raw_paths(RAW, "h200")["micro"], mixed["micro"])
        for kind in ("runs",) if sharing == "jobs" else ("runs", "corpus", "trace"):
            shutil.copy(h100[kind], mixed[kind])
        if sharing == "resident":
            shutil.copy(h100["trace_sample"], Path(tmp) / "h100_trace_sample.npz")
        fit_profile("h200", tmp, profile, jobs=jobs, sharing=sharing)
    with tempfile.TemporaryDirectory() as out:
        summary = validate_profile(profile, raw_paths(RAW, "h200")["runs"], out_dir=out, jobs=jobs, report=report,
                                   corpus=sharing == "resident")
        tidy_report(Path(out), report, HERE / f"figures{tag}")
    (HERE / f"transfer{tag}_summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return summary


def tidy_report(out: Path, report: Path, figures: Path) -> None:
    """The report's figures beside it (in `figures`), its paths relative to the repository, its links from
    this folder."""
    shutil.copytree(out / "figures", figures, dirs_exist_ok=True)
    text = re.sub(r"\([^()\s]*figures/", f"({figures.name}/", report.read_text().replace(str(out), "OUT"))
    text = text.replace(str(HERE.parents[2]) + "/", "")
    report.write_text(text.replace("(calibration-analysis.md)", "(../../calibration-analysis.md)"))


if __name__ == "__main__":
    s = main(int(sys.argv[1]) if sys.argv[1:] else 2, sys.argv[2] if sys.argv[2:] else "jobs")
    print(json.dumps(s["mape"], indent=1))
