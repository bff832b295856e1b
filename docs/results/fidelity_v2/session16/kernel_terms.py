"""Session 16: each graph-timed non-fused transform kernel's error under a profile, beside its size and what it
achieved: blocks, serial steps a block, MB moved, the bytes over the DRAM rate the profile gives the type, its
FLOPs over the chip's rate, a block's added latency, measured and predicted us, and measured GB/s.

    python graphk.py PROFILE PRED.json   (../session12/graphk.py: every kernel's measured and predicted time)
    python kernel_terms.py PRED.json [OP] [PROFILE]   (OP 1 input, 3 output: the default)
"""
import json
import sys

import numpy as np

from megasim.app.calibrate.predict import graph_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.work import issued_flops

kernels = json.load(open(sys.argv[1]))
op = Op(int(sys.argv[2])) if len(sys.argv) > 2 else Op.OUTPUT_TRANSFORM
spec = load_profile(sys.argv[3] if len(sys.argv) > 3 else "scenarios/calibrations/h200.toml").apply(load_gpu("h200"))
name, clock = OP_NAMES[op], spec.clock_mhz
rows = []
for x in kernels:
    g = graph_of({"layer": x["layer"], "variant": x["variant"], "partition": x["partition"]})
    mine = g.op == op
    read, written = g.bytes_per_task()
    moved = float((read + written)[mine].sum())
    dram_us = moved / (spec.dram_gbps * 1e3 * spec.dram_efficiency * spec.dram_access_efficiency[name])
    fp_us = issued_flops(g)[mine].sum() / (spec.fp32_flops_per_cycle_per_sm * spec.sm_count
                                           * spec.compute_efficiency[name]) / clock
    latency_us = (spec.block_fixed_cycles[name] + g.serial_steps[mine].mean() * spec.step_cycles[name]) / clock
    meas, pred = x["meas"][op], x["pred"][op]
    rows.append((np.log(pred / meas), x["shape"], x["variant"], int(mine.sum()), g.serial_steps[mine].mean(),
                 moved / 1e6, dram_us, fp_us, latency_us, meas, pred, moved / 1e3 / meas))
print("log err  shape                           F  blocks steps      MB dram_us  fp_us lat_us    meas    pred  GB/s")
for r in sorted(rows):
    print("%+.2f %-33s F%d %6d %5.1f %7.1f %6.1f %6.1f %5.1f %7.1f %7.1f %5.0f" % r)
