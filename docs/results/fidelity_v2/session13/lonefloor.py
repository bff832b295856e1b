"""Study patch: an input-transform block takes at least one DRAM latency plus its bytes over what a lone block
keeps in flight (`GPUSpec.block_bytes_per_cycle`), with one rate inside the megakernel and another in its own
kernel. The H200 trace sample's lone input blocks (nothing else working on their SM) move a median 7.46 bytes a
cycle in the megakernel (25 cases, 7.1-8.5 on the paper layers) and 9.82 in the non-fused kernel (18 cases)."""
import megasim.engine.core as core

_run_scale, _Columns = core.run_scale, core.BlockColumns
_FUSED = {}


def install(fused: float, own: float) -> None:
    def flagged(kernels, gpu, seed):
        _FUSED["on"] = any(k.check_deps for k in kernels)
        return _run_scale(kernels, gpu, seed)

    def columns(order, graph, gpu, scale):
        rate = fused if _FUSED.get("on") else own
        gpu = gpu.with_model(block_bytes_per_cycle={**gpu.block_bytes_per_cycle, "input_transform": rate})
        return _Columns(order, graph, gpu, scale)

    core.run_scale, core.BlockColumns = flagged, columns
