"""Session 16: is a transform kernel's DRAM rate set by how many bytes its blocks keep in flight (Little's law)?

The non-fused output kernels of the paper layers reach more of the DRAM the more blocks they run: 64 blocks
(ResNet-4) 1.7 TB/s, 128 (ResNet-3, YOLOv3-5) 2.8-3.0, 196 (ResNet-2) 3.3, 256 and more 3.7-4.0. That is a
per-block rate, about 13 bytes a cycle, under a chip-wide one. The spec has the per-block term
(`block_bytes_per_cycle`: a block takes at least one DRAM latency plus its bytes over it); the committed profile
leaves it empty and fits a low `dram_access_efficiency` instead. This searches both on a grid against the
graph-timed non-fused kernels of the train shapes and reports the held-out shapes under the best point.
With --no-step the block's serial steps cost nothing and its fixed cycles are 0 or the committed ones: Little's
law alone, the per-block floor standing in for the additive latency rather than adding to it.
Usage: python block_cap.py [output|input] [PROFILE] [--no-step]
"""
import itertools
import sys
from pathlib import Path

from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu
from megasim.contract.problem import OP_NAMES, Op

sys.path.insert(0, str(Path(__file__).parent))
from kernel_errors import errors, rms, show  # noqa: E402

NO_STEP = "--no-step" in sys.argv
args = [a for a in sys.argv[1:] if a != "--no-step"]
OP = Op.INPUT_TRANSFORM if args[:1] == ["input"] else Op.OUTPUT_TRANSFORM
NAME = OP_NAMES[OP]
spec0 = load_profile(args[1] if len(args) > 1 else "scenarios/calibrations/h200.toml").apply(load_gpu("h200"))


def at(cap, dram):
    return spec0.with_model(block_bytes_per_cycle={**spec0.block_bytes_per_cycle, **({NAME: cap} if cap else {})},
                            dram_access_efficiency={**spec0.dram_access_efficiency, NAME: dram})


def no_step(spec, fixed):
    return spec.with_model(step_cycles={**spec0.step_cycles, NAME: 0.0},
                           block_fixed_cycles={**spec0.block_fixed_cycles, NAME: fixed})


if NO_STEP:
    for fixed, cap, dram in itertools.product((0.0, spec0.block_fixed_cycles[NAME]), (16.0, 20.0, 24.0, 32.0), (0.8, 0.95)):
        show(f"fixed {fixed:.0f} cap {cap:.0f} dram {dram}", errors(no_step(at(cap, dram), fixed), OP, "train"))
    sys.exit(0)
d0 = spec0.dram_access_efficiency[NAME]
show("committed, train", errors(spec0, OP, "train"))
show("committed, held-out", errors(spec0, OP, "heldout"))
best = None
for cap, dram in itertools.product((8.0, 12.0, 16.0, 24.0), (d0, 0.8, 0.9)):
    e = errors(at(cap, dram), OP, "train")
    show(f"cap {cap:4.0f} B/cycle dram {dram:.3f}, train", e)
    if best is None or rms(e)[0] < best[0]:
        best = (rms(e)[0], cap, dram)
_, cap, dram = best
show(f"best cap {cap:.0f} dram {dram:.3f}, held-out", errors(at(cap, dram), OP, "heldout"))
