"""Session 16: stage 2 for one transform (its efficiency, step, fixed cycles and DRAM access efficiency, as
`fit._fit_op` fits the input transform), with and without `serial.py`, and the graph-timed kernels of the train
and held-out shapes under each fit.  Usage: python serial_stage2.py [output|input] [serial]
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
OPNAME = {"output": "output_transform", "input": "input_transform"}[sys.argv[1] if len(sys.argv) > 1 else "output"]
if "serial" in sys.argv[2:]:
    import serial
    serial.install([OPNAME])

from megasim.app.calibrate import fit  # noqa: E402
from megasim.app.calibrate.measurements import attach_graph_kernels, load_runs  # noqa: E402
from megasim.app.calibrate.run import corpus_runs  # noqa: E402
from kernel_errors import errors, rms  # noqa: E402
from megasim.app.calibrate.profile import load_profile  # noqa: E402
from megasim.app.catalog import load_gpu  # noqa: E402
from megasim.contract.problem import OP_NAMES, Op  # noqa: E402

OP = next(o for o in Op if OP_NAMES[o] == OPNAME)
spec = load_profile("scenarios/calibrations/h200.toml").apply(load_gpu("h200"))
RAW = Path("scenarios/calibrations/raw")
runs = load_runs(RAW / "h200_runs.json")[1] + corpus_runs(RAW / "h200_corpus.jsonl")
attach_graph_kernels(runs, RAW / "h200_kernel_graph_times.jsonl")
sample = fit.host_hidden(fit.stage2_sample(runs), OP, fit.HOST_HIDDEN_US)
err, eff, dram, step, fixed = fit._fit_op(sample, OP, spec, None)
print(f"stage 2 {OPNAME}: rms log error {np.sqrt(err):.4f} on {len(sample)} kernels; efficiency {eff:.4f}, step {step}, "
      f"fixed {fixed}, DRAM access {dram}", flush=True)
fitted = spec.with_model(compute_efficiency={**spec.compute_efficiency, OPNAME: eff},
                         step_cycles={**spec.step_cycles, OPNAME: step},
                         block_fixed_cycles={**spec.block_fixed_cycles, OPNAME: fixed},
                         dram_access_efficiency={**spec.dram_access_efficiency, OPNAME: dram})
for split in ("train", "heldout"):
    e = errors(fitted, OP, split)
    every = rms(e)
    print(f"  {split:8s} all rms {every[0]:.3f} median {every[1]:+.3f}; "
          + ", ".join("F({}) {:.3f}/{:+.3f}".format(v, *rms(e, v)) for v in (2, 4, 6)), flush=True)
