"""Per-block hardware timelines of a sample of shapes, mappings and scheduling modes.

    python docs/results/trace_sample/run_device.py OUT      # on the device (carry .whl)

The collector is the package's (`megasim.app.calibrate.trace_sample_runs`, which `megasim calibrate` runs as its
"trace_sample" part): per case, the fused megakernel timed untraced, then one traced launch of it and one of the
four non-fused kernels, each kept gzipped under OUT/h200_trace_sample/ (a rerun continues where a run stopped),
and, once every case is there, packed into OUT/h200_trace_sample.npz.
"""
import sys
from pathlib import Path

if __name__ == "__main__":
    from megasim.app.calibrate.trace_sample_runs import measure_trace_sample
    done = measure_trace_sample("h200", Path(sys.argv[1]), budget_s=560.0)
    sys.exit(0 if done["left"] == 0 else 1)
