"""Nsight Compute's DRAM counters on ten cold megakernel launches beside the model's reads for the same launches.

    python docs/results/ncu_fused_h200/analyse_fused.py [PROFILE] [USABLE]     # prints a Markdown table

Reads scenarios/calibrations/raw/h200_fused_dram.json (`to_raw.py`). USABLE replaces the profile's
`l2_usable_fraction`."""
import sys
from dataclasses import replace

import numpy as np

from megasim.app.calibrate.fused_dram import load_fused_dram, model_reads
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu

spec = load_profile(sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml").apply(load_gpu("h200"))
if len(sys.argv) > 2:
    spec = replace(spec, l2_usable_fraction=float(sys.argv[2]))
print(f"l2_usable_fraction {spec.l2_usable_fraction}\n")
print("| case | measured us | model us | DRAM read MB, measured / model | error | L2 read hit rate, measured |")
print("|---|---|---|---|---|---|")
errors = []
for c in load_fused_dram("scenarios/calibrations/raw/h200_fused_dram.json"):
    reads, us = model_reads(spec, c)
    errors.append(np.log(reads / c["dram_read_bytes"]))
    print(f"| {c['layer']} | {c['duration_us']:.1f} | {us:.1f} | {c['dram_read_bytes'] / 1e6:.1f} / {reads / 1e6:.1f} | "
          f"{reads / c['dram_read_bytes'] - 1:+.0%} | {c['l2_read_hit_rate']:.2f} |")
print(f"\nmedian |log error| {np.median(np.abs(errors)):.3f}, rms {np.sqrt(np.mean(np.square(errors))):.3f}")
