"""Session 12's refits: the H200 profile refitted on its own trace sample (committed readings), then validated,
in-process so that the study patches reach the fit's worker processes (forked).

    python docs/results/fidelity_v2/session12/study.py OUTDIR [--aged GAMMA HELD] [--gap US] [--hw JSON] [--usable F] [--prefix] [--over JSON]

--aged: an SM's FP32 issue shared by issue weight x GAMMA^(age rank), a block whose FP32 work is done keeping
HELD of its weight (aged.py); --gap: launch_overhead_us in place of the microbenchmark's 0.864; --prefix: stage 2
compares each kernel's graph prefix difference with the kernel simulated after its predecessors (prefix.py);
--usable: l2_usable_fraction pinned in stages 1-3; --hw: hardware overrides (JSON); --over: model overrides (trace_law.NEIGHBOUR_READINGS). Rows: rows.txt; the profiles and validations beside it.
"""
import sys, contextlib, json, argparse
from pathlib import Path
sys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))
p = argparse.ArgumentParser(); p.add_argument('out'); p.add_argument('--prefix', action='store_true')
p.add_argument('--gap', type=float); p.add_argument('--hw', default='{}'); p.add_argument('--usable', type=float); p.add_argument('--aged', nargs=2, type=float); p.add_argument('--over', default='{}')
p.add_argument('--sample', default='scenarios/calibrations/raw/h200_trace_sample.npz')
a = p.parse_args(); out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
if a.aged:
    import aged; aged.install(*a.aged)
if a.prefix:
    import prefix; prefix.install()
from megasim.app.calibrate import fit, trace_law
trace_law.NEIGHBOUR_READINGS.update(json.loads(a.over))
if a.usable is not None:
    fit.fit_fused.__defaults__ = (fit.OVERHEADS, (a.usable, a.usable), 24, None, None)  # a grid of one point has no neighbour to walk to
if a.gap is not None or a.hw != '{}' or a.usable is not None:
    orig = fit.hardware_overrides
    def patched(micro, spec):
        hw, model = orig(micro, spec); hw.update(json.loads(a.hw))
        if a.gap is not None: hw["launch_overhead_us"] = a.gap
        if a.usable is not None: model["l2_usable_fraction"] = a.usable
        return hw, model
    import megasim.app.calibrate.run as run; run.hardware_overrides = patched
from megasim.app.cli import main
with open(out / "cal.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
    print("rc", main(["calibrate", "--gpu", "h200", "--from-raw", "--trace-sample", a.sample, "--out", str(out / "h200.toml")]))
with open(out / "v.json", "w") as f, contextlib.redirect_stdout(f):
    main(["validate", "--profile", str(out / "h200.toml"), "--measurements", "scenarios/calibrations/raw/h200_runs.json",
          "--json", "--corpus", "--out", str(out)])
