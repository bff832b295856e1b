"""The output transform's block law (`trace_law.output_law`) fitted to the input transforms of a trace sample:
does one law hold lone and shared input blocks, fused and non-fused?

    python docs/results/fidelity_v2/session13/input_law.py [SAMPLE]
"""
import sys
import numpy as np
from megasim.app.calibrate import trace_law
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.problem import Op

sample = sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/raw/h200_trace_sample.npz"
meta, traces = load_sample(sample)
spec = load_gpu("h200")
clock = 1979.494; peak = spec.fp32_flops_per_cycle_per_sm
for op in (Op.OUTPUT_TRANSFORM, Op.INPUT_TRANSFORM):
    fixed, step, eff, rate, errors = trace_law.output_law(meta, traces, clock, peak, op=op)
    e = np.array(list(errors.values()))
    print(f"{op.name}: fixed {fixed:.0f} step {step:.1f} eff {eff:.4f} chip bytes/cycle {rate:.1f}; "
          f"per-launch median error: median abs {np.median(abs(e)):.3f}, max abs {abs(e).max():.3f}")
    for (case, launch), v in sorted(errors.items(), key=lambda kv: -abs(kv[1]))[:8]:
        print(f"    {case:28s} {launch:8s} {v:+.3f}")
