"""Session 18's refits: session 17's study.py with three study patches (options.py takes their options).

    python docs/results/fidelity_v2/session18/study.py OUTDIR [--queued S] [--input-dram D] [--l2-cap JSON] [session 17 options]

--queued S: only S of an input block's FP32 work queues for its SM's issue, the rest is latency (queued.py).
--input-dram D: stage 2 keeps the input transform's DRAM access efficiency at D (dram_pin.py).
--l2-cap JSON: per task type, its blocks' bytes a cycle through L2, a cap inside the queue's sharing (l2cap.py)."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
argv = sys.argv[1:]
import options  # noqa: E402

options.take_all(argv)
sys.argv = [str(here.parent / "session17" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
