"""Session 16's refit-and-validate: session 15's (`../session15/study.py`) with the usable L2 pinned in a way that
survives its stage-3 code grid (session 12's `--usable` rebinds `fit_fused`'s defaults, which session 15's wrapper
no longer has).

    python docs/results/fidelity_v2/session16/study.py OUTDIR --model JSON [--l2 FRACTION] [session 15 options]
"""
import runpy
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
argv = sys.argv[1:]
if "--l2" in argv:
    i = argv.index("--l2")
    frac = float(argv[i + 1])
    del argv[i:i + 2]
    import megasim.app.calibrate.fit as fit
    import megasim.app.calibrate.run as run
    fit.USABLE = (frac, frac)  # a grid of one point has no neighbour to walk to
    fit.fit_fused.__defaults__ = (fit.OVERHEADS, fit.USABLE, *fit.fit_fused.__defaults__[2:])
    hardware = run.hardware_overrides

    def pinned(micro, spec):
        hw, model = hardware(micro, spec)
        return hw, {**model, "l2_usable_fraction": frac}
    run.hardware_overrides = pinned
sys.argv = [str(here.parent / "session15" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
