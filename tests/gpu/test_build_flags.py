"""The two build flags megasim.torch runs with: NCHW input and output, and a megakernel that resets its own
control words. Each must compute bit for bit what the default build computes, launch after launch."""
import numpy as np
import pytest

from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.gpu.megakernel import FusedConv, Workspace  # noqa: E402
from megasim.gpu.nonfused import NonFusedConv  # noqa: E402

SMALL = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                  gemm_k_per_task=32, output_channels_per_task=8, filter_k_per_task=4, threads=128)
LAYER = Layer(2, 24, 13, 11, 40, "flags")


def _data(layer, seed=7):
    rng = np.random.default_rng(seed)
    x = cp.asarray(rng.standard_normal((layer.n, layer.h, layer.w, layer.c)).astype(np.float32))
    w = cp.asarray(rng.standard_normal((layer.k, 3, 3, layer.c)).astype(np.float32))
    return x, w


def _nan(shape):
    return cp.full(shape, cp.nan, dtype=cp.float32)


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("launch", ["fused", "nonfused"])
def test_nchw_build_equals_the_nhwc_build_bitwise(m, launch):
    graph = build_graph(LAYER, WinogradVariant(m), SMALL)
    x, w = _data(LAYER)
    x_nchw = cp.ascontiguousarray(x.transpose(0, 3, 1, 2))
    n, h, wd, k = LAYER.n, LAYER.h, LAYER.w, LAYER.k
    y, y_nchw = _nan((n, h, wd, k)), _nan((n, k, h, wd))
    ws = Workspace(graph)
    if launch == "fused":
        mapping = make(graph, "paper", dig=4, dgo=8, m=2)
        FusedConv(graph, mapping, workspace=ws).run(x, w, y)
        FusedConv(graph, mapping, workspace=ws, layout="nchw").run(x_nchw, w, y_nchw)
    else:
        NonFusedConv(graph, workspace=ws).run(x, w, y)
        NonFusedConv(graph, workspace=ws, layout="nchw").run(x_nchw, w, y_nchw)
    assert not bool(cp.isnan(y).any())
    assert bool((y_nchw.transpose(0, 2, 3, 1) == y).all())


@pytest.mark.parametrize("mode", ["static", "persistent", "ready_queue"])
def test_self_reset_build_repeats_bitwise_without_a_reset_copy(mode):
    """Five launches back to back, no copy between them: each equals the copy-reset build's output, and the
    live control words end where they started."""
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    mapping = make(graph, "paper", dig=4, dgo=8, m=2)
    x, w = _data(LAYER)
    ref = _nan((LAYER.n, LAYER.h, LAYER.w, LAYER.k))
    FusedConv(graph, mapping, mode=mode).run(x, w, ref)
    conv = FusedConv(graph, mapping, mode=mode, self_reset=True)
    assert len(conv.steps()) == 1
    live = len(conv.ctl_init)
    for _ in range(5):
        y = _nan(ref.shape)
        conv.run(x, w, y)
        assert bool((y == ref).all())
        assert bool((conv.ctl[:live] == conv.ctl_init).all())
    ys = [_nan(ref.shape) for _ in range(4)]
    for y in ys:  # queued without a wait in between
        conv.launch(x, w, y)
    cp.cuda.get_current_stream().synchronize()
    conv.check()
    assert all(bool((y == ref).all()) for y in ys)


def test_self_reset_build_times_out_and_then_runs_again():
    """A deadlocking mapping still raises; the failed launch's words are reset by `check`, so the build is
    usable again (the next launch times out the same way, not at once)."""
    layer = Layer(2, 16, 16, 16, 32, "illegal")
    graph = build_graph(layer, WinogradVariant(4), SMALL)
    order = make(graph, "sequential").order.copy()
    inputs = np.flatnonzero(graph.op[order] == 1)
    order[inputs[-1]] = order[inputs[0]]
    x, w = _data(layer, 4)
    conv = FusedConv(graph, order, self_reset=True, spin_limit_ns=100_000_000)
    for _ in range(2):
        with pytest.raises(MegasimError, match="mapping deadlock or timeout at logical block"):
            conv.run(x, w, _nan((layer.n, layer.h, layer.w, layer.k)))
        assert bool((conv.ctl[:len(conv.ctl_init)] == conv.ctl_init).all())
