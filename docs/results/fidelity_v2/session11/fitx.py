"""python fitx.py SAMPLE OUTDIR JSON: refit h200 with NEIGHBOUR_READINGS updated by JSON (model overrides), then validate."""
import subprocess, sys, contextlib, json
from pathlib import Path
sample, out, over = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]); out.mkdir(parents=True, exist_ok=True)
from megasim.app.calibrate import trace_law
trace_law.NEIGHBOUR_READINGS.update(over)
from megasim.app.cli import main
with open(out / "cal.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    print("rc", main(["calibrate", "--gpu", "h200", "--from-raw", "--trace-sample", sample, "--out", str(out / "h200.toml")]))
with open(out / "v.json", "w") as f:
    subprocess.run(["megasim", "validate", "--profile", str(out / "h200.toml"), "--measurements",
                    "scenarios/calibrations/raw/h200_runs.json", "--json", "--corpus", "--out", str(out)], stdout=f, check=True)
