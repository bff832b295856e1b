"""python fitwb.py SAMPLE OUTDIR [DIRTY_L2_FRACTION]: refit h200 with write_back detached (the engine's dirty-byte
budget, `dirty_l2_fraction`, at the given share of the usable L2; without it, as session 11 first ran it)."""
import subprocess, sys, contextlib
from pathlib import Path
sample, out = sys.argv[1], Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
from megasim.app.calibrate import trace_law
trace_law.NEIGHBOUR_READINGS["write_back"] = "detached"
if len(sys.argv) > 3:
    trace_law.NEIGHBOUR_READINGS["dirty_l2_fraction"] = float(sys.argv[3])
from megasim.app.cli import main
with open(out / "cal.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    print("rc", main(["calibrate", "--gpu", "h200", "--from-raw", "--trace-sample", sample, "--out", str(out / "h200.toml")]))
with open(out / "v.json", "w") as f:
    subprocess.run(["megasim", "validate", "--profile", str(out / "h200.toml"), "--measurements",
                    "scenarios/calibrations/raw/h200_runs.json", "--json", "--corpus", "--out", str(out)], stdout=f, check=True)
