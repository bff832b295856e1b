"""python fit.py STRETCH OUTDIR: refit h200 (own trace sample) with input stretch STRETCH, then validate."""
import subprocess, sys
from pathlib import Path
stretch, out = float(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
from megasim.app.calibrate import trace_law
trace_law.INPUT_STRETCH["h200"] = stretch
from megasim.app.cli import main
import contextlib
with open(out / "cal.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    main(["calibrate", "--gpu", "h200", "--from-raw", "--out", str(out / "h200.toml")])
with open(out / "v.json", "w") as f:
    subprocess.run(["megasim", "validate", "--profile", str(out / "h200.toml"), "--measurements",
                    "scenarios/calibrations/raw/h200_runs.json", "--json", "--corpus", "--out", str(out)], stdout=f, check=True)
