"""Session 17 study patch: `GPUSpec.first_wave_stagger` on some kernels only.

`install("gemm")` staggers the first wave of the non-fused GEMM kernel alone; `install("gemm,megakernel")`
also the megakernel's. A kernel left out keeps equal shares in its first wave (its slots count as one, which
`first_wave_stagger` does not stagger)."""
import megasim.engine.core as core
from megasim.contract.resources import blocks_per_sm
from megasim.engine.blocks import first_wave_stagger, work_scale


def install(names: str) -> None:
    chosen = set(names.split(","))

    def run_scale(kernels, gpu, seed):
        scale = work_scale(sum(len(k.tasks) for k in kernels), gpu.block_work_cv, seed)
        if not gpu.first_wave_stagger:
            return scale
        slots = [blocks_per_sm(gpu, k.resources) if k.name in chosen else 1 for k in kernels]
        staggered = first_wave_stagger(kernels, slots, gpu.sm_count, gpu.first_wave_stagger)
        return staggered if scale is None else scale * staggered

    core.run_scale = run_scale
