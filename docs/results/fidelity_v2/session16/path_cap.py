"""Session 16: a block's own memory path as Little's law. Under `memory_path_share = "block"` each block may move at
most `sm_bytes_per_cycle` (an estimate in scenarios/gpus/h200.toml, 64) whatever else its SM runs; under "launch"
(the committed form) that is divided by the launch's blocks per SM. Traced lone output blocks move about 20-24
bytes a cycle in the megakernel's tail and in few-block non-fused kernels alike (calibration-analysis.md, sessions
14 and 16). This grids the share and the per-block rate against the graph-timed input and output kernels of the
train and held-out shapes. Usage: python path_cap.py PROFILE  (with mseg.diff applied for the fixed M)
"""
import dataclasses
import sys
from pathlib import Path

from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu
from megasim.contract.problem import Op

sys.path.insert(0, str(Path(__file__).parent))
from kernel_errors import errors, rms  # noqa: E402

spec0 = load_profile(sys.argv[1]).apply(load_gpu("h200"))


def summary(spec, op, split):
    return rms(errors(spec, op, split))


print("share   B/cycle | input train, held-out (rms / median) | output train, held-out")
for share, rate in [("launch", 64.0), ("block", 16.0), ("block", 20.0), ("block", 24.0), ("block", 32.0),
                    ("block", 64.0)]:
    spec = dataclasses.replace(spec0, memory_path_share=share, sm_bytes_per_cycle=rate)
    cols = [summary(spec, op, split) for op in (Op.INPUT_TRANSFORM, Op.OUTPUT_TRANSFORM) for split in ("train", "heldout")]
    print(f"{share:7s} {rate:6.0f} | " + "  ".join(f"{a:.3f}/{b:+.3f}" for a, b in cols), flush=True)
