"""`megasim bench --trace`: the hardware's per-block timelines of the layer just timed.

After the timed runs, the megakernel runs once more through its trace build
(the same mapping and scheduling mode; thread 0 of each block records
`%smid` and `%globaltimer` at its start, when its dependencies are met and at
its end, as calibration does) and the four non-fused kernels once more
through theirs (kernels/trace_nonfused.cu). Each goes after a few untraced
launches, so caches and clocks have settled. The two timelines go into one
trace file (`measured_trace.write_measured_trace`) with the measurement
header, for Perfetto and for `megasim compare`.
"""
from __future__ import annotations

from pathlib import Path

from megasim.app.measured_trace import problem_meta, write_measured_trace

WARM_LAUNCHES = 3


def trace_layer(path, graph, mapping, mode: str, ws, inputs) -> Path:
    """Trace the fused run (in `mode`) and the non-fused kernels of `graph` on rotated `inputs`
    (xs, ws, ys), and write both to `path`."""
    from megasim.gpu.backend import measurement_header
    from megasim.gpu.megakernel import FusedConv
    from megasim.gpu.nonfused import NonFusedConv
    xs, wts, ys = inputs
    fused = FusedConv(graph, mapping, trace=True, workspace=ws, mode=mode)
    for i in range(WARM_LAUNCHES + 1):
        fused.run(xs[i % len(xs)], wts[i % len(xs)], ys[i % len(xs)])
    nonfused = NonFusedConv(graph, workspace=ws)
    for i in range(WARM_LAUNCHES):
        nonfused.run(xs[i % len(xs)], wts[i % len(xs)], ys[i % len(xs)])
    launches = {"fused": fused.trace_records(), "nonfused": nonfused.trace_records(xs[0], wts[0], ys[0])}
    meta = {"header": measurement_header(), **problem_meta(graph, mapping, mode),
            "note": f"one traced launch each, after {WARM_LAUNCHES} untraced ones; times in us from the "
                    "launch's first block start (%globaltimer)"}
    return write_measured_trace(path, launches, meta)
