"""The 3xTF32 GEMM body (gpu/kernels/gemm_tf32x3.cuh): FP32-accurate on the tensor cores, by the bound a
build must meet to count as FP32 (relative L2 error against float64 at most 5e-6 for F(2) and F(4), 1e-5
for F(6), and at most twice the FFMA build's), and one set of bits for every launch, mode and mapping."""
import numpy as np
import pytest

from megasim.app.bench_best import FP32_BOUND as BOUND
from megasim.app.catalog import partition_for
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, WinogradVariant
from megasim.contract.resources import warp_partition

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.gpu.baselines import reference_fp64, rel_l2_error  # noqa: E402
from megasim.gpu.megakernel import FusedConv, Workspace  # noqa: E402
from megasim.gpu.nonfused import NonFusedConv  # noqa: E402


def graph_of(layer: Layer, m: int):
    return build_graph(layer, WinogradVariant(m), warp_partition(layer, partition_for(layer, "h200")))


def data(layer: Layer, seed: int = 3):
    rng = np.random.default_rng(seed)
    x = cp.asarray(rng.standard_normal((layer.n, layer.h, layer.w, layer.c)).astype(np.float32))
    w = cp.asarray(rng.standard_normal((layer.k, 3, 3, layer.c)).astype(np.float32))
    return x, w


def out(layer: Layer):
    return cp.full((layer.n, layer.h, layer.w, layer.k), cp.nan, dtype=cp.float32)


def errors(layer: Layer, m: int) -> tuple[float, float, object, object]:
    """(3xTF32 error, FFMA error, 3xTF32 output, FFMA output) of the non-fused warp builds."""
    graph = graph_of(layer, m)
    x, w = data(layer)
    ref = reference_fp64(layer, x, w)
    ys = {}
    for precision in ("3xtf32", "fp32"):
        ys[precision] = out(layer)
        NonFusedConv(graph, gemm="warp", precision=precision).run(x, w, ys[precision])
    return rel_l2_error(ys["3xtf32"], ref), rel_l2_error(ys["fp32"], ref), ys["3xtf32"], ys["fp32"]


@pytest.mark.parametrize("m", [2, 4, 6])
@pytest.mark.parametrize("k", [64, 128], ids=["8x4 per thread", "8x8 per thread"])
def test_3xtf32_is_fp32_accurate_and_the_same_bits_in_every_mode_and_mapping(m, k):
    layer = Layer(2, 64, 14, 12, k, "tf32x3")
    err, err_fp32, y, y_fp32 = errors(layer, m)
    assert err <= BOUND[m] and err <= 2 * err_fp32, (err, err_fp32)
    assert not bool(cp.array_equal(y, y_fp32))  # the tensor cores ran, not the FFMA body
    graph = graph_of(layer, m)
    x, w = data(layer)
    ws = Workspace(graph)
    for mode in ("static", "persistent", "ready_queue"):
        for mapping in (make(graph, "paper"), make(graph, "sequential")):
            got = out(layer)
            FusedConv(graph, mapping, mode=mode, gemm="warp", precision="3xtf32", workspace=ws).run(x, w, got)
            assert bool(cp.array_equal(got, y)), (mode, mapping)


@pytest.mark.parametrize("c", [16, 64, 256, 1024])
def test_3xtf32_stays_fp32_accurate_as_the_reduction_grows(c):
    """The small-part products carry what one TF32 pass drops; short reductions are where 3xTF32 is known to
    fall a little below FP32 (cutlass#729), long ones where rounding adds up."""
    err, err_fp32, _, _ = errors(Layer(1, c, 14, 14, 64, f"c{c}"), 4)
    assert err <= BOUND[4] and err <= 2 * err_fp32, (err, err_fp32)


def test_a_nan_or_inf_input_spoils_the_same_outputs_in_3xtf32_as_in_fp32():
    """The body rounds to TF32 with bit arithmetic, which need not keep a NaN a NaN; the remainder it leaves
    then is one, so a non-finite operand still spoils exactly the outputs it reaches."""
    layer = Layer(1, 64, 14, 14, 64, "nonfinite")
    graph = graph_of(layer, 4)
    x, w = data(layer)
    x[0, 3, 5, 7] = cp.nan
    x[0, 9, 2, 40] = cp.inf
    x[0, 12, 12, 1] = cp.float32(np.frombuffer(np.uint32(0x7F800001).tobytes(), np.float32)[0])  # NaN, low payload
    ys = {}
    for precision in ("3xtf32", "fp32"):
        ys[precision] = out(layer)
        NonFusedConv(graph, gemm="warp", precision=precision).run(x, w, ys[precision])
    spoiled = ~cp.isfinite(ys["fp32"])
    assert int(spoiled.sum()) > 0
    assert bool(cp.array_equal(~cp.isfinite(ys["3xtf32"]), spoiled))


@pytest.mark.parametrize("mode", ["static", "persistent"])
def test_a_3xtf32_build_whose_mapping_deadlocks_raises_instead_of_hanging(mode):
    layer = Layer(2, 64, 34, 34, 64, "illegal")  # three tile groups: the last one's input task never runs
    graph = graph_of(layer, 4)
    order = make(graph, "sequential").order.copy()
    inputs = np.flatnonzero(graph.op[order] == 1)
    order[inputs[-1]] = order[inputs[0]]
    x, w = data(layer)
    conv = FusedConv(graph, order, mode=mode, gemm="warp", precision="3xtf32", spin_limit_ns=100_000_000)
    with pytest.raises(MegasimError, match="mapping deadlock or timeout"):
        conv.run(x, w, out(layer))


def test_3xtf32_needs_the_warp_tiling():
    layer = Layer(1, 64, 14, 14, 64)
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
    with pytest.raises(MegasimError, match="warp GEMM body"):
        NonFusedConv(graph, precision="3xtf32")
