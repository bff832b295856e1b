"""The usable L2 at which the model's megakernel DRAM reads best match Nsight Compute's: each fraction's
log errors over the ten cases (`fused_dram.read_errors`), under a profile.

    python docs/results/ncu_fused_h200/scan_usable.py [PROFILE]"""
import sys
from dataclasses import replace

import numpy as np

from megasim.app.calibrate.fused_dram import load_fused_dram, read_errors
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu

spec = load_profile(sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml").apply(load_gpu("h200"))
cases = load_fused_dram("scenarios/calibrations/raw/h200_fused_dram.json")
print("usable | median abs log error | rms | " + " ".join(c["layer"] for c in cases))
for usable in (0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.75, 1.0):
    e = read_errors(replace(spec, l2_usable_fraction=usable), cases)
    print(f"{usable} | {np.median(np.abs(e)):.3f} | {np.sqrt(np.mean(e * e)):.3f} | " + " ".join(f"{x:+.2f}" for x in e),
          flush=True)
