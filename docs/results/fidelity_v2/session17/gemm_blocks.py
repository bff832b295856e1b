"""The non-fused GEMM kernel's over-prediction (graph-timed median +3.8%, ResNet-4 +13%): block law or schedule?

For every traced non-fused launch, beside each other:
- law: the committed body law's median relative error on the traced GEMM blocks (work = ready to end), with
  each block's traced co-runner count n (does the law itself over-predict the blocks?);
- n: the traced blocks' median co-runners, and the model's for the same kernel simulated alone;
- work: the traced and simulated median block work;
- span: the traced GEMM span (first GEMM start to last GEMM end) and the simulated GEMM kernel alone.
Usage: python gemm_blocks.py [PROFILE]"""
import sys

import numpy as np

from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import gemm_corunners, graph_of, launches_of, load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.contract.resources import gemm_body
from megasim.contract.work import issued_flops, serial_steps
from megasim.engine.interpreter import SimpyInterpreter

prof = sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml"
spec = load_profile(prof).apply(load_gpu("h200"))
meta, traces = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
nf = launches_of(traces, "nonfused")
peak, mhz = spec.fp32_flops_per_cycle_per_sm, spec.clock_mhz
rng = np.random.default_rng(0)
print(f"{'case':26s} {'body':14s} {'blocks':>6s} {'law err':>8s} {'n tr/sim':>9s} {'work tr/sim us':>15s} "
      f"{'span tr/sim us':>15s} {'span err':>8s}")
for case, problem in meta.items():
    rec = nf[case]["nonfused"]
    g = graph_of(problem)
    body = gemm_body(g.layer, g.partition)
    b = spec.gemm_bodies[body]
    flops, steps = issued_flops(g), serial_steps(g)
    work, n, tasks = gemm_corunners(rec, rng, with_tasks=True)
    law = (b["block_fixed_cycles"] + steps[tasks] * b["step_cycles"]
           + n * flops[tasks] / (b["compute_efficiency"] * peak)) / mhz
    gm = rec["op"] == Op.GEMM
    span = rec["end_us"][gm].max() - rec["start_us"][gm].min()
    ex = SimpyInterpreter(spec).run(g, None, RunConfig(launch="gemm"))
    r = ex.records
    sm_ = r[r["op"] == Op.GEMM]
    sim_rec = {"op": sm_["op"], "sm": sm_["sm"], "ready_us": sm_["ready_us"], "end_us": sm_["end_us"],
               "task": sm_["task"]}
    swork, sn = gemm_corunners(sim_rec, rng)
    sspan = sm_["end_us"].max() - sm_["start_us"].min()
    print(f"{case:26s} {body:14s} {gm.sum():6d} {np.median(law / work - 1) * 100:+7.1f}% "
          f"{np.median(n):4.2f}/{np.median(sn):4.2f} {np.median(work):7.1f}/{np.median(swork):7.1f} "
          f"{span:7.1f}/{sspan:7.1f} {(sspan / span - 1) * 100:+7.1f}%")
