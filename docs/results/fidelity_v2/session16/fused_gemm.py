"""Session 16 study patch: the megakernel's GEMM blocks under a law of their own.

`gemm_split.py` finds the megakernel's GEMM blocks 0-6% slower than the GEMM kernel's for the same work. With
`install()`, calibration's stage 1b fits the GEMM body laws twice, on the trace sample's fused launches and on its
non-fused ones, pins the non-fused laws as `gemm_bodies` (the GEMM kernel's) and keeps the fused ones aside; every
simulated megakernel launch then runs under the fused laws. The engine is not changed: the interpreter's
`run_kernels` is wrapped.
"""
import dataclasses

import megasim.app.calibrate.run as run
import megasim.app.calibrate.trace_law as tl
import megasim.engine.interpreter as interpreter

FUSED_BODIES: dict = {}


def _laws(meta, traces, kind, clock, peak):
    sub = {c: {k: v for k, v in ls.items() if k == kind} for c, ls in traces.items()}
    law = lambda fixed, step, eff, *_: {"compute_efficiency": round(eff, 4), "step_cycles": round(step, 1),  # noqa: E731
                                        "block_fixed_cycles": round(fixed, 1)}
    return {body: law(*fit) for body, fit in tl.gemm_body_laws(meta, sub, clock, peak).items()}


def install() -> None:
    traced = run.traced_constants
    real_run = interpreter.run_kernels

    def traced_split(spec, trace, sample_path):
        model, pinned = traced(spec, trace, sample_path)
        meta, traces = tl.load_sample(sample_path)
        peak = spec.fp32_flops_per_cycle_per_sm
        model["gemm_bodies"] = _laws(meta, traces, "nonfused", spec.clock_mhz, peak)
        FUSED_BODIES.clear()
        FUSED_BODIES.update(_laws(meta, traces, "fused", spec.clock_mhz, peak))
        return model, pinned

    def run_kernels(graph, kernels, gpu, *args, **kwargs):
        kernels = list(kernels)
        if FUSED_BODIES and kernels and kernels[0].check_deps:
            gpu = dataclasses.replace(gpu, gemm_bodies={**gpu.gemm_bodies, **FUSED_BODIES})
        return real_run(graph, kernels, gpu, *args, **kwargs)

    run.traced_constants = traced_split
    interpreter.run_kernels = run_kernels
