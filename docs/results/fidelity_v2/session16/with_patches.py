"""Run a session-16 script with study patches installed first.

    python with_patches.py PATCH[,PATCH...] SCRIPT [ARGS...]     (PATCH: halo_cap)
"""
import runpy
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
for name in sys.argv[1].split(","):
    __import__(name).install()
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
