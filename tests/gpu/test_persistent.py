"""The persistent megakernel on a real GPU: same output as static, a grid that fits, never hanging.

A persistent grid holds only what is co-resident, and its blocks take tickets in logical order, so a
task's parents hold earlier tickets on blocks that are running: no wait can be on a block that has no
slot. A grid larger than what fits would break that, and is refused.
"""
import time

import numpy as np
import pytest

from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant

from ..conftest import device_inputs, run_conv

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.gpu.megakernel import FusedConv, resident_capacity  # noqa: E402

SMALL = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                  gemm_k_per_task=32, output_channels_per_task=8, filter_k_per_task=4, threads=128)
LAYER = Layer(2, 40, 20, 19, 72, "persistent")


def _run(graph, mapping, x, w, **kw):
    return run_conv(FusedConv(graph, mapping, **kw), graph.layer, x, w)


def test_persistent_output_is_bitwise_the_static_output():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    x, w = device_inputs(LAYER, 1)
    mappings = [make(graph, "sequential"), make(graph, "paper", dig=8, dgo=16, m=2)]
    mappings += [make(graph, "random_topo", seed=s) for s in range(3)]
    for mp in mappings:
        ref = _run(graph, mp, x, w)
        assert not bool(cp.isnan(ref).any())
        for blocks in (None, 1, 7):
            y = _run(graph, mp, x, w, mode="persistent", blocks=blocks)
            assert bool((y == ref).all()), f"{mp.strategy} {mp.params} blocks={blocks} differs from static"


def test_persistent_grid_is_what_fits_and_no_more():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    conv = FusedConv(graph, make(graph, "sequential"), mode="persistent")
    capacity = resident_capacity(cp, conv.kernel, SMALL.threads)
    assert conv.grid == min(graph.num_tasks, capacity)
    with pytest.raises(MegasimError, match="exceeds the .* that fit on this GPU at once"):
        FusedConv(graph, make(graph, "sequential"), mode="persistent", blocks=capacity + 1)


def test_persistent_trace_covers_every_task_once():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    mp = make(graph, "paper", dig=8, dgo=16, m=2)
    x, w = device_inputs(LAYER, 2)
    conv = FusedConv(graph, mp, mode="persistent", trace=True, blocks=16)
    y = run_conv(conv, LAYER, x, w)
    rec = conv.trace_records()
    assert np.array_equal(rec["task"], mp.order)
    assert (rec["start_us"] <= rec["ready_us"]).all() and (rec["ready_us"] <= rec["end_us"]).all()


@pytest.mark.parametrize("blocks", [None, 4])
def test_persistent_illegal_mapping_never_hangs_and_the_next_launch_is_right(blocks):
    """Reversed: every child before its parents. Four resident blocks can only spin on parents that no
    block will take, so it must time out; a grid holding every task at once may also just finish."""
    layer = Layer(8, 64, 32, 32, 64, "reversed")
    part = Partition(tiles_per_group=32, input_channels_per_task=32, gemm_mats_per_task=4,
                     gemm_k_per_task=64, output_channels_per_task=32, filter_k_per_task=4, threads=256)
    graph = build_graph(layer, WinogradVariant(4), part)
    x, w = device_inputs(layer, 3)
    t0 = time.perf_counter()
    try:
        _run(graph, make(graph, "sequential").order[::-1].copy(), x, w, mode="persistent", blocks=blocks,
             spin_limit_ns=200_000_000)
        raised = False
    except MegasimError as e:
        assert "mapping deadlock or timeout at logical block" in str(e)
        raised = True
    assert time.perf_counter() - t0 < 10
    assert raised or blocks is None
    good = make(graph, "sequential")
    assert bool((_run(graph, good, x, w, mode="persistent", blocks=blocks) == _run(graph, good, x, w)).all())


def test_persistent_needs_the_ticket():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    with pytest.raises(MegasimError, match="persistent mode takes its tasks from an atomic counter"):
        FusedConv(graph, make(graph, "sequential"), mode="persistent", ticket=False)
