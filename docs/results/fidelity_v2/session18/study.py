"""Session 18's refits: session 17's study.py with a queued fraction of the input transform's FP32 work.

    python docs/results/fidelity_v2/session18/study.py OUTDIR [--queued S] [session 17 options]

--queued S: only S of an input block's FP32 work queues for its SM's issue, the rest is latency (queued.py).
--input-dram D: stage 2 keeps the input transform's DRAM access efficiency at D (dram_pin.py).
--l2-cap JSON: per task type, its blocks' bytes a cycle through L2, a cap inside the queue's sharing (l2cap.py)."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
argv = sys.argv[1:]
if "--queued" in argv:
    i = argv.index("--queued")
    sys.path.insert(0, str(here))
    import queued
    queued.install({"input_transform": float(argv[i + 1])})
    del argv[i:i + 2]
if "--input-dram" in argv:
    i = argv.index("--input-dram")
    sys.path.insert(0, str(here))
    import dram_pin
    dram_pin.install(float(argv[i + 1]))
    del argv[i:i + 2]
if "--l2-cap" in argv:
    i = argv.index("--l2-cap")
    sys.path.insert(0, str(here))
    import json
    import l2cap
    l2cap.install(json.loads(argv[i + 1]))
    del argv[i:i + 2]
sys.argv = [str(here.parent / "session17" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
