"""Fit a study profile under `sm_sharing = "resident"` with the GEMM's constants from the per-block trace law.

    python docs/results/fidelity_v2/fit_resident.py GPU OUT.toml [docs/results/trace_sample/h100/gemm_law.json]

`megasim calibrate --from-raw`'s three stages on the committed raw data, with two changes: every block keeps
its share of its SM's FP32 issue until it ends (`sm_sharing = "resident"`), and stage 2 does not fit the GEMM
but takes its fixed cycles, step cycles and efficiency from the law that `trace_sample/analyse.py` fitted on
per-block traces (a kernel's total cannot split a GEMM block's latency from its throughput; traces of blocks
beside 1 to 5 others can). Stage 2 still fits the transforms on their kernels, and stage 3 the megakernel's
overhead and usable L2 on fused runs. Session 7 (docs/calibration-analysis.md) used it for the H200 and H100
study profiles in `profiles/`.
"""
import json
import sys
from pathlib import Path

import megasim.app.calibrate.fit as fit
import megasim.app.calibrate.run as run
from megasim.app.catalog import SCENARIOS
from megasim.contract.problem import Op

LAW = Path(__file__).parents[1] / "trace_sample" / "h100" / "gemm_law.json"


def main(gpu: str, out: str, law_path: Path = LAW) -> int:
    law = json.loads(Path(law_path).read_text())
    eff, step, fixed = law["compute_efficiency"], law["step_cycles"], law["block_fixed_cycles"]
    load_gpu, fit_op = run.load_gpu, fit._fit_op
    run.load_gpu = lambda name: load_gpu(name).with_model(sm_sharing="resident")

    def pinned_gemm(layers, op, spec, pool, evals=fit.STAGE2_EVALS, tick=None):
        if op != Op.GEMM:
            return fit_op(layers, op, spec, pool, evals, tick)
        s = fit._with_efficiency(spec, op, eff, gemm_half_efficiency_channels=0.0,
                                 step_cycles={**spec.step_cycles, "gemm": step},
                                 block_fixed_cycles={**spec.block_fixed_cycles, "gemm": fixed})
        return float(fit._kernel_error(layers, op, s, pool)), eff, None, step, fixed

    fit._fit_op = pinned_gemm
    run.fit_profile(gpu, SCENARIOS / "calibrations" / "raw", out, jobs=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3], *(Path(p) for p in sys.argv[3:4])))
