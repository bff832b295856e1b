"""The usable L2 at which the model's megakernel DRAM reads best match Nsight Compute's: each fraction's
log errors over the ten cases (`fused_dram.read_errors`), under a profile.

    python docs/results/ncu_fused/scan_usable.py GPU [PROFILE]"""
import sys
from dataclasses import replace

import numpy as np

from megasim.app.calibrate.fused_dram import load_fused_dram, read_errors
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu

gpu = sys.argv[1]
spec = load_profile(sys.argv[2] if len(sys.argv) > 2 else f"scenarios/calibrations/{gpu}.toml").apply(load_gpu(gpu))
cases = load_fused_dram(f"scenarios/calibrations/raw/{gpu}_fused_dram.json")
print("usable | median abs log error | rms | " + " ".join(c["layer"] for c in cases))
for usable in (0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.75, 1.0):
    e = read_errors(replace(spec, l2_usable_fraction=usable), cases)
    print(f"{usable} | {np.median(np.abs(e)):.3f} | {np.sqrt(np.mean(e * e)):.3f} | " + " ".join(f"{x:+.2f}" for x in e),
          flush=True)
