"""The warp-tiled GEMM body on a real GPU: bit for bit the generic body, fused and non-fused.

Both bodies sum every accumulator's channels in ascending order with one fmaf each, so any difference
is a bug (a dropped or doubled channel, a ragged tile or column stored wrongly).
"""
import pytest

from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import gemm_warp_tiled

from ..conftest import device_inputs, run_conv

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.gpu.megakernel import FusedConv  # noqa: E402
from megasim.gpu.nonfused import NonFusedConv  # noqa: E402

T64K128 = Partition(tiles_per_group=64, input_channels_per_task=32, gemm_mats_per_task=1, gemm_k_per_task=128,
                    output_channels_per_task=32, filter_k_per_task=8, threads=128)
T32K64 = Partition(tiles_per_group=32, input_channels_per_task=16, gemm_mats_per_task=3, gemm_k_per_task=64,
                   output_channels_per_task=16, filter_k_per_task=8, threads=64)
CASES = [(Layer(3, 48, 23, 19, 200, "ragged"), T64K128, 4), (Layer(2, 64, 30, 30, 72, "k72"), T32K64, 4),
         (Layer(2, 32, 14, 14, 128, "f6"), T64K128, 6), (Layer(1, 16, 9, 13, 64, "f2"), T32K64, 2)]


@pytest.mark.parametrize("layer,part,m", CASES, ids=[c[0].name for c in CASES])
def test_warp_body_is_bitwise_the_generic_body(layer, part, m):
    assert gemm_warp_tiled(layer, part)
    graph = build_graph(layer, WinogradVariant(m), part)
    x, w = device_inputs(layer, 7)
    mp = make(graph, "paper")
    ref = run_conv(FusedConv(graph, mp), layer, x, w)
    assert not bool(cp.isnan(ref).any())
    outs = {"nonfused": run_conv(NonFusedConv(graph, gemm="warp"), layer, x, w)}
    for mode in ("static", "persistent", "ready_queue"):
        outs[mode] = run_conv(FusedConv(graph, mp, mode=mode, gemm="warp"), layer, x, w)
    bad = [k for k, y in outs.items() if not bool((y == ref).all())]
    assert not bad, f"warp body differs from the generic one in {bad}"
