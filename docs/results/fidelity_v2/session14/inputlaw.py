"""Study patch: the input transform's efficiency, step and fixed cycles pinned from its per-block trace law
(`trace_law.output_law` with `op=INPUT_TRANSFORM`), as the output transform's are, so stage 2 fits only its DRAM
access efficiency. With LONE > 0, a lone-in-the-megakernel term is not added here: the law alone is the test."""
from megasim.app.calibrate import run
from megasim.contract.problem import Op


def install() -> None:
    orig = run.traced_constants

    def traced(spec, trace, sample_path):
        from megasim.app.calibrate.trace_law import load_sample, output_law
        model, pinned = orig(spec, trace, sample_path)
        fixed, step, eff, *_ = output_law(*load_sample(sample_path), spec.clock_mhz,
                                          spec.fp32_flops_per_cycle_per_sm, op=Op.INPUT_TRANSFORM)
        pinned[Op.INPUT_TRANSFORM] = {"compute_efficiency": round(eff, 4), "step_cycles": round(step, 1),
                                      "block_fixed_cycles": round(fixed, 1)}
        return model, pinned
    run.traced_constants = traced
