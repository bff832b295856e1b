"""Session 13's refits: session 12's study.py with one more patch.

    python docs/results/fidelity_v2/session13/study.py OUTDIR [--fused JSON] [session 12 options]

--input-floor FUSED,[STEP]: an input transform's serial steps a floor under its jobs, FUSED times it in the megakernel
(inputfloor.py); --lone FUSED,OWN: a lone input block's bytes a cycle in the megakernel and in its own kernel, a floor
(lonefloor.py); --fused-step DELTA: an input step's extra cycles inside the megakernel (fusedstep.py); --stretch S: the H200's input stretch (trace_law.INPUT_STRETCH); --fused-floor SCALE: a fused input block's floor at SCALE x the lone step (fusedfloor.py); --lone-step SCALE: a lone input block's extra step time in the megakernel, two passes (lonestep.py); --fused: {"input_transform": 1.23}, a task type's work factor inside the megakernel (fusedwork.py).
"""
import json, runpy, sys
from pathlib import Path
here = Path(__file__).parent
sys.path.insert(0, str(here))
argv = sys.argv[1:]
if "--fused" in argv:
    i = argv.index("--fused"); import fusedwork; fusedwork.install(json.loads(argv[i + 1])); del argv[i:i + 2]
if "--input-floor" in argv:
    i = argv.index("--input-floor"); import inputfloor
    fused, _, step = argv[i + 1].partition(","); inputfloor.install(float(fused), float(step) if step else None)
    del argv[i:i + 2]
if "--lone" in argv:
    i = argv.index("--lone"); import lonefloor
    lonefloor.install(*map(float, argv[i + 1].split(","))); del argv[i:i + 2]
if "--fused-step" in argv:
    i = argv.index("--fused-step"); import fusedstep; fusedstep.install(float(argv[i + 1])); del argv[i:i + 2]
if "--stretch" in argv:
    i = argv.index("--stretch"); from megasim.app.calibrate import trace_law
    trace_law.INPUT_STRETCH["h200"] = float(argv[i + 1]); del argv[i:i + 2]
if "--fused-floor" in argv:
    i = argv.index("--fused-floor"); import fusedfloor; fusedfloor.install(float(argv[i + 1])); del argv[i:i + 2]
if "--lone-step" in argv:
    i = argv.index("--lone-step"); import lonestep; lonestep.install(float(argv[i + 1])); del argv[i:i + 2]
sys.argv = [str(here.parent / "session12" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
