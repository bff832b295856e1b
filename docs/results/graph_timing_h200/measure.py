"""Each non-fused kernel timed inside a CUDA graph, on the 13 paper layers and the 150 corpus shapes.

    python docs/results/graph_timing_h200/measure.py OUT [GPU] [WORKERS] [BUDGET_S]

The collector is the package's (`megasim.app.calibrate.kernel_graph_runs`, which `megasim calibrate` runs as
its "kernel_graph" part); this is the study's command line for it: OUT/<gpu>_kernel_graph_times.jsonl, one JSON
line per shape, a rerun skipping the shapes already there. Kernels compile first in WORKERS processes.
"""
import sys
from pathlib import Path

if __name__ == "__main__":
    from megasim.app.calibrate.kernel_graph_runs import measure_kernel_graph_times
    a = sys.argv[1:]
    measure_kernel_graph_times(a[1] if len(a) > 1 else "h200", Path(a[0]), float(a[3]) if len(a) > 3 else 300.0,
                               int(a[2]) if len(a) > 2 else 15)
