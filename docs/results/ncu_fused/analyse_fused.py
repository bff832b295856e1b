"""Nsight Compute's DRAM counters on ten cold megakernel launches beside the model's reads for the same launches.

    python docs/results/ncu_fused/analyse_fused.py GPU [PROFILE] [USABLE]     # prints a Markdown table

Reads scenarios/calibrations/raw/<GPU>_fused_dram.json (`to_raw.py`); PROFILE defaults to the GPU's committed one.
USABLE replaces the profile's `l2_usable_fraction`."""
import sys
from dataclasses import replace

import numpy as np

from megasim.app.calibrate.fused_dram import load_fused_dram, model_reads
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu

gpu = sys.argv[1]
spec = load_profile(sys.argv[2] if len(sys.argv) > 2 else f"scenarios/calibrations/{gpu}.toml").apply(load_gpu(gpu))
if len(sys.argv) > 3:
    spec = replace(spec, l2_usable_fraction=float(sys.argv[3]))
print(f"l2_usable_fraction {spec.model.l2_usable_fraction}\n")
print("| case | measured us | model us | DRAM read MB, measured / model | error | L2 read hit rate, measured |")
print("|---|---|---|---|---|---|")
errors = []
for c in load_fused_dram(f"scenarios/calibrations/raw/{gpu}_fused_dram.json"):
    reads, us = model_reads(spec, c)
    errors.append(np.log(reads / c["dram_read_bytes"]))
    print(f"| {c['layer']} | {c['duration_us']:.1f} | {us:.1f} | {c['dram_read_bytes'] / 1e6:.1f} / {reads / 1e6:.1f} | "
          f"{reads / c['dram_read_bytes'] - 1:+.0%} | {c['l2_read_hit_rate']:.2f} |")
print(f"\nmedian |log error| {np.median(np.abs(errors)):.3f}, rms {np.sqrt(np.mean(np.square(errors))):.3f}")
