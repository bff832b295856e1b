"""Each traced megakernel launch against the same launch simulated: per task type, the total block work
(ready to end, summed over blocks, us) and the median block wait (start to ready), plus the launch span.

    python fused_work.py [PROFILE] [CASE...]

Work summed over blocks is what a type takes from the machine; a type whose simulated total is off by more
than the launch's error is where the fused error comes from."""
import sys

import numpy as np

from megasim.app.calibrate.predict import mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import graph_of, load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import OP_NAMES, Op
from megasim.engine.interpreter import SimpyInterpreter

prof = sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml"
spec = load_profile(prof).apply(load_gpu("h200"))
meta, traces = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
cases = sys.argv[2:] or list(meta)
for case in cases:
    about = meta[case]
    g = graph_of(about)
    mapping = mapping_of(about)
    ex = SimpyInterpreter(spec).run(g, mapping, RunConfig(mode=about.get("mode", "static")))
    sim, tr = ex.records, traces[case]["fused"]
    span_t = tr["end_us"].max() - tr["start_us"].min()
    span_s = sim["end_us"].max() - sim["start_us"].min()
    cols = []
    for op in Op:
        mt, ms = tr["op"] == op, sim["op"] == op
        if not mt.any():
            continue
        wt = (tr["end_us"][mt] - tr["ready_us"][mt]).sum()
        ws = (sim["end_us"][ms] - sim["ready_us"][ms]).sum()
        qt = np.median(tr["ready_us"][mt] - tr["start_us"][mt])
        qs = np.median(sim["ready_us"][ms] - sim["start_us"][ms])
        cols.append(f"{OP_NAMES[op][:3]} work {ws / wt - 1:+6.1%} wait {qt:5.1f}/{qs:5.1f}")
    print(f"{case[:24]:24s} span {span_t:7.1f}/{span_s:7.1f} {span_s / span_t - 1:+6.1%} | " + " | ".join(cols))
