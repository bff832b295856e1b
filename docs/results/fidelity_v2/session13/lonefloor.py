"""Study patch: an input-transform block takes at least one DRAM latency plus its bytes over what a lone block
keeps in flight (`GPUSpec.block_bytes_per_cycle`), with one rate inside the megakernel and another in its own
kernel. The H200 trace sample's lone input blocks (nothing else working on their SM) move a median 7.46 bytes a
cycle in the megakernel (25 cases, 7.1-8.5 on the paper layers) and 9.82 in the non-fused kernel (18 cases)."""
import megasim.engine.core as core

from fusedrun import fused, track

_Columns = core.BlockColumns


def install(rate_fused: float, own: float) -> None:
    track()

    def columns(order, graph, gpu, scale):
        rate = rate_fused if fused() else own
        gpu = gpu.with_model(block_bytes_per_cycle={**gpu.block_bytes_per_cycle, "input_transform": rate})
        return _Columns(order, graph, gpu, scale)
    core.BlockColumns = columns
