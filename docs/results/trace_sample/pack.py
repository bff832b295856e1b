"""Pack measured traces (gzipped Perfetto files) into one compact NumPy archive.

    python docs/results/trace_sample/pack.py DIR_WITH_TRACES OUT.npz

`megasim.app.calibrate.trace_sample_runs.pack`: per case and launch, each block's task, SM, op and its start,
ready and end in ticks of %globaltimer's 32 ns, as differences so they compress, and the problem as JSON, so the
traces cost a few MB in git instead of 25. `megasim.app.calibrate.trace_law.load_sample` reads it back.
"""
import sys
from pathlib import Path

if __name__ == "__main__":
    from megasim.app.calibrate.trace_sample_runs import pack
    out = Path(sys.argv[2])
    print(f"{pack(Path(sys.argv[1]), out)} cases -> {out} ({out.stat().st_size / 1e6:.1f} MB)")
