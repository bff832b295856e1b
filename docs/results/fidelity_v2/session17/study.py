"""Session 17's refits: session 13's study.py with the GEMM's first-wave stagger pinned.

    python docs/results/fidelity_v2/session17/study.py OUTDIR [--stagger S] [--fused-input FIXED,STEP,EFF] [session 13 options]

--stagger S: calibrate's reading of the GEMM's first-wave stagger (`end_order.stagger_reading`, 0.07 on the H200
sample) replaced by S. Without it this is the committed recipe (`megasim calibrate --gpu h200 --from-raw`, then
`megasim validate --corpus`). --fused-input: the megakernel's input blocks under their own block law (fused_input.py). Runs made on f97b6d3 used a study patch, `stagger_scope.py`, removed since: see README.md."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
argv = sys.argv[1:]
if "--stagger" in argv:
    i = argv.index("--stagger")
    from megasim.app.calibrate import end_order
    value = float(argv[i + 1])
    end_order.stagger_reading = lambda meta, traces: value
    del argv[i:i + 2]
if "--fused-input" in argv:
    i = argv.index("--fused-input")
    sys.path.insert(0, str(here))
    import fused_input
    fused_input.install(*map(float, argv[i + 1].split(",")))
    del argv[i:i + 2]
sys.argv = [str(here.parent / "session13" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
