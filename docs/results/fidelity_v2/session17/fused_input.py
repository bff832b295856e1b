"""Session 17 study patch: the megakernel's input blocks under a block law of their own.

`install(fixed, step, eff)` makes every megakernel launch run its input transforms with these block fixed cycles,
step cycles and compute efficiency (`GPUSpec.for_megakernel`), as the megakernel's GEMM blocks run under
`fused_gemm_bodies`; the input kernel keeps what stage 2 fits. `trace_law.output_law(op=INPUT_TRANSFORM)` on the
H200 sample's fused launches alone gives 2103 fixed and 1611 step cycles and an efficiency of 0.386 (median launch
error 9.7%), against 878, 1114 and 0.328 on its non-fused launches (5.1%) and stage 2's 423, 877 and 0.221."""
from dataclasses import replace

from megasim.contract.spec import GPUSpec

_for_megakernel = GPUSpec.for_megakernel


def install(fixed: float, step: float, eff: float) -> None:
    def for_megakernel(self):
        spec = _for_megakernel(self)
        return replace(spec, compute_efficiency={**spec.compute_efficiency, "input_transform": eff},
                       step_cycles={**spec.step_cycles, "input_transform": step},
                       block_fixed_cycles={**spec.block_fixed_cycles, "input_transform": fixed})
    GPUSpec.for_megakernel = for_megakernel
