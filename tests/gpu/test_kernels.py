"""The CUDA kernels on a real GPU: correct, bitwise reproducible, never hanging.

References come from the definition (gpu.winograd.direct_conv, float64 on
the CPU) for small layers and from float64 cuDNN for the paper's layers,
which run at batch 2 here to keep the device time short (the bench checks
them at batch 64). Inputs are fresh random numbers; outputs are poisoned
with NaN before every launch, so an unwritten element fails the check.
"""
import time

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
from megasim.gpu.winograd import direct_conv  # noqa: E402

PART = Partition(tiles_per_group=32, input_channels_per_task=32, gemm_mats_per_task=4,
                 gemm_k_per_task=64, output_channels_per_task=32, filter_k_per_task=4, threads=256)
SMALL = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                  gemm_k_per_task=32, output_channels_per_task=8, filter_k_per_task=4, threads=128)
TOL = {2: 5e-6, 4: 5e-6, 6: 1e-4}


def _data(layer, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((layer.n, layer.h, layer.w, layer.c)).astype(np.float32)
    w = rng.standard_normal((layer.k, 3, 3, layer.c)).astype(np.float32)
    return x, w


def _poisoned(layer):
    return cp.full((layer.n, layer.h, layer.w, layer.k), cp.nan, dtype=cp.float32)


def _rel(out, ref) -> float:
    out = cp.asnumpy(out).astype(np.float64)
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def _fused(graph, mapping, x, w, **kw):
    y = _poisoned(graph.layer)
    FusedConv(graph, mapping, **kw).run(x, w, y)
    return y


ODD = [Layer(1, 3, 7, 5, 5, "n1-c3"), Layer(3, 5, 9, 13, 7, "ragged"), Layer(2, 17, 10, 11, 33, "odd-ck"),
       Layer(2, 16, 6, 6, 20, "k20")]


@pytest.mark.parametrize("layer", ODD, ids=lambda lay: lay.name)
@pytest.mark.parametrize("m", [2, 4, 6])
def test_odd_shapes_match_direct_conv(layer, m):
    graph = build_graph(layer, WinogradVariant(m), SMALL)
    x, w = _data(layer, 1)
    ref = direct_conv(x, w)
    y = _fused(graph, make(graph, "paper", dig=4, dgo=8, m=2), cp.asarray(x), cp.asarray(w))
    assert not bool(cp.isnan(y).any())
    assert _rel(y, ref) <= TOL[m]


def _paper_layers():
    from megasim.app.catalog import layer_names, load_layer
    return [load_layer(n) for n in layer_names()]


@pytest.mark.parametrize("layer", _paper_layers(), ids=lambda lay: lay.name)
def test_paper_layers_fused_and_nonfused(layer):
    from megasim.gpu.baselines import reference_fp64
    small = Layer(2, layer.c, layer.h, layer.w, layer.k, layer.name)
    graph = build_graph(small, WinogradVariant(4), PART)
    x, w = (cp.asarray(a) for a in _data(small, 2))
    ref = cp.asnumpy(reference_fp64(small, x, w))
    y = _fused(graph, make(graph, "paper"), x, w)
    assert not bool(cp.isnan(y).any())
    assert _rel(y, ref) <= 5e-6
    y2 = _poisoned(small)
    NonFusedConv(graph).run(x, w, y2)
    assert bool((y == y2).all()), "fused and non-fused differ"


def test_bitwise_identical_across_mappings_and_paths():
    layer = Layer(2, 40, 20, 19, 72, "bitwise")
    graph = build_graph(layer, WinogradVariant(4), SMALL)
    x, w = (cp.asarray(a) for a in _data(layer, 3))
    ref = _poisoned(layer)
    nf = NonFusedConv(graph)
    nf.run(x, w, ref)
    g = nf.capture(x, w, ref)
    assert not bool(cp.isnan(ref).any())
    mappings = [make(graph, "sequential"), make(graph, "interleave"), make(graph, "paper", dig=8, dgo=16, m=2)]
    mappings += [make(graph, "random_topo", seed=s) for s in range(4)]
    for mp in mappings:
        y = _fused(graph, mp, x, w)
        assert bool((y == ref).all()), f"{mp.strategy} {mp.params} differs from non-fused"
    y = _poisoned(layer)
    g.launch()
    cp.cuda.get_current_stream().synchronize()
    g2 = nf.capture(x, w, y)
    g2.launch()
    cp.cuda.get_current_stream().synchronize()
    assert bool((y == ref).all()), "graph-captured non-fused differs"


def test_stage_times_graphed_add_up_to_the_pipeline():
    """Graph prefixes time each kernel without the host: the kernels add up to the four-kernel graph, each
    is positive, a one-kernel prefix computes only U (V, M and y untouched), and the empty graph is cheaper
    than any prefix."""
    layer = Layer(8, 64, 28, 28, 64, "graphed")
    graph = build_graph(layer, WinogradVariant(4), PART)
    sets = [[cp.asarray(a) for a in _data(layer, seed)] for seed in (1, 2)]
    xs, ws_ = [x for x, _ in sets], [w for _, w in sets]
    ys = [_poisoned(layer) for _ in range(2)]
    nf = NonFusedConv(graph)
    t = nf.stage_times_graphed(xs, ws_, ys, reps=10)
    assert all(k > 0 for k in t["kernels_us"]), t
    assert abs(sum(t["kernels_us"]) - t["prefix_us"][-1]) < 1e-6
    assert 0 < t["floor_us"] < t["prefix_us"][0]
    y = _poisoned(layer)
    nf.capture(xs[0], ws_[0], y, stages=1).launch()
    cp.cuda.get_current_stream().synchronize()
    assert bool(cp.isnan(y).all()), "a filter-only prefix wrote the output"


def test_dropped_parent_times_out_quickly():
    layer = Layer(2, 16, 16, 16, 32, "illegal")
    graph = build_graph(layer, WinogradVariant(4), SMALL)
    order = make(graph, "sequential").order.copy()
    inputs = np.flatnonzero(graph.op[order] == 1)
    order[inputs[-1]] = order[inputs[0]]  # one input transform never runs, another runs twice
    x, w = (cp.asarray(a) for a in _data(layer, 4))
    t0 = time.perf_counter()
    with pytest.raises(MegasimError, match="mapping deadlock or timeout at logical block"):
        _fused(graph, order, x, w, spin_limit_ns=200_000_000)
    assert time.perf_counter() - t0 < 10


def test_reversed_mapping_times_out_instead_of_hanging():
    layer = Layer(8, 64, 32, 32, 64, "reversed")
    graph = build_graph(layer, WinogradVariant(4), PART)
    order = make(graph, "sequential").order[::-1].copy()
    x, w = (cp.asarray(a) for a in _data(layer, 5))
    t0 = time.perf_counter()
    try:
        _fused(graph, order, x, w, spin_limit_ns=200_000_000)
    except MegasimError as e:
        assert "mapping deadlock or timeout" in str(e)
    assert time.perf_counter() - t0 < 10


def test_trace_records():
    layer = Layer(2, 32, 16, 16, 64, "trace")
    graph = build_graph(layer, WinogradVariant(4), SMALL)
    mp = make(graph, "paper", dig=4, dgo=8, m=2)
    x, w = (cp.asarray(a) for a in _data(layer, 6))
    fc = FusedConv(graph, mp, trace=True)
    y = _poisoned(layer)
    fc.run(x, w, y)
    rec = fc.trace_records()
    assert len(rec) == graph.num_tasks
    assert np.array_equal(rec["task"], mp.order)
    assert (rec["sm"] >= 0).all() and rec["start_us"].min() == 0.0
    assert (rec["start_us"] <= rec["ready_us"]).all() and (rec["ready_us"] <= rec["end_us"]).all()
    ref = _poisoned(layer)
    FusedConv(graph, mp).run(x, w, ref)
    assert bool((y == ref).all())


def test_module_refuses_other_partition():
    layer = Layer(1, 8, 8, 8, 8, "a")
    g1 = build_graph(layer, WinogradVariant(4), SMALL)
    fc = FusedConv(g1, make(g1, "sequential"), workspace=Workspace(g1))
    g2 = build_graph(layer, WinogradVariant(4), Partition(**{**SMALL.to_dict(), "tiles_per_group": 8}))
    with pytest.raises(MegasimError, match="partition.tiles_per_group: built 16, graph 8"):
        fc.module.check(g2)
