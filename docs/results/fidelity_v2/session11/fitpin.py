"""python fitpin.py SAMPLE OPS OUTDIR: refit h200 with the transform laws of OPS (comma list: input,filter) pinned too."""
import subprocess, sys, contextlib
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from tlaw import transform_law
from megasim.app.calibrate import run as R
from megasim.contract.problem import Op
sample, ops, out = sys.argv[1], sys.argv[2].split(","), Path(sys.argv[3])
out.mkdir(parents=True, exist_ok=True)
orig = R.traced_constants
def patched(spec, trace, sample_path):
    model, pinned = orig(spec, trace, sample_path)
    from megasim.app.calibrate.trace_law import load_sample
    s = load_sample(sample_path)
    for name in [o for o in ops if o]:
        op = {"input": Op.INPUT_TRANSFORM, "filter": Op.FILTER_TRANSFORM}[name]
        coef, _ = transform_law(*s, spec.clock_mhz, spec.fp32_flops_per_cycle_per_sm, op)
        pinned[op] = {"compute_efficiency": round(1 / coef[2], 4), "step_cycles": round(coef[1], 1), "block_fixed_cycles": round(coef[0], 1)}
    return model, pinned
R.traced_constants = patched
from megasim.app.cli import main
with open(out / "cal.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    rc = main(["calibrate", "--gpu", "h200", "--from-raw", "--trace-sample", sample, "--out", str(out / "h200.toml")])
    print("rc", rc)
with open(out / "v.json", "w") as f:
    subprocess.run(["megasim", "validate", "--profile", str(out / "h200.toml"), "--measurements",
                    "scenarios/calibrations/raw/h200_runs.json", "--json", "--corpus", "--out", str(out)], stdout=f, check=True)
