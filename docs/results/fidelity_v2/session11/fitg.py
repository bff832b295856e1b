"""GPU=h100 python fitg.py SAMPLE OUTDIR JSON: fitx.py for any GPU (GPU, default h200): refit with NEIGHBOUR_READINGS
updated by JSON (model overrides), then validate on that GPU's runs."""
import subprocess, sys, contextlib, json
from pathlib import Path
GPU = __import__("os").environ.get("GPU", "h200")
sample, out, over = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3]); out.mkdir(parents=True, exist_ok=True)
from megasim.app.calibrate import trace_law
trace_law.NEIGHBOUR_READINGS.update(over)
from megasim.app.cli import main
with open(out / "cal.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    print("rc", main(["calibrate", "--gpu", GPU, "--from-raw", "--trace-sample", sample, "--out", str(out / f"{GPU}.toml")]))
with open(out / "v.json", "w") as f:
    subprocess.run(["megasim", "validate", "--profile", str(out / f"{GPU}.toml"), "--measurements",
                    f"scenarios/calibrations/raw/{GPU}_runs.json", "--json", "--corpus", "--out", str(out)], stdout=f, check=True)
