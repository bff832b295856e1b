"""Session 14's refits: session 13's study.py with one more patch.

    python docs/results/fidelity_v2/session14/study.py OUTDIR [--input-law] [session 13 options]

--input-law: the input transform's efficiency and latencies pinned from its per-block trace law (inputlaw.py);
--race MIX: the megakernel's first-wave tickets in atomic-arrival order (ticketrace.py);
--cap JSON: {task type: fraction of the SM's FP32 rate one block issues}, the rest water-filled (capped.py);
--unshared OPS: those task types' FP32 work as latency, not a share of the SM (unshared.py; OPS comma-separated).
"""
import runpy, sys
from pathlib import Path
here = Path(__file__).parent
sys.path.insert(0, str(here))
sys.path.insert(0, str(here.parent / "session13"))
argv = sys.argv[1:]
if "--race" in argv:
    i = argv.index("--race"); import ticketrace; ticketrace.install(float(argv[i + 1])); del argv[i:i + 2]
if "--unshared" in argv:
    i = argv.index("--unshared"); import unshared; unshared.install(tuple(argv[i + 1].split(","))); del argv[i:i + 2]
if "--cap" in argv:
    i = argv.index("--cap"); import capped, json as _json; capped.install(_json.loads(argv[i + 1])); del argv[i:i + 2]
if "--input-law" in argv:
    argv.remove("--input-law"); import inputlaw; inputlaw.install()
sys.argv = [str(here.parent / "session13" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
