"""Session 17's refits: session 13's study.py with the stagger's scope as a patch.

    python docs/results/fidelity_v2/session17/study.py OUTDIR [--stagger-on gemm[,megakernel,...]] [session 13 options]

Set the stagger itself with session 12's --over '{"first_wave_stagger": S}'."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
argv = sys.argv[1:]
if "--stagger-on" in argv:
    i = argv.index("--stagger-on")
    import stagger_scope
    stagger_scope.install(argv[i + 1])
    del argv[i:i + 2]
sys.argv = [str(here.parent / "session13" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
