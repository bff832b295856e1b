"""The ready-queue megakernel on a real GPU: the static output for any order, and never hanging.

The order is a priority here, so an order that times out a static or persistent launch (every child
before its parents) must finish with the same output. Only a task that can never become ready (a
counter that never reaches zero) is an error, and it must be raised within the spin limit.
"""
import time

import numpy as np
import pytest

from megasim.contract.control import COUNTERS_AT, STRIDE
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
LAYER = Layer(2, 40, 20, 19, 72, "ready")


def _run(graph, mapping, x, w, **kw):
    return run_conv(FusedConv(graph, mapping, **kw), graph.layer, x, w)


def test_ready_queue_output_is_bitwise_the_static_output_for_any_order():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    x, w = device_inputs(LAYER, 1)
    paper = make(graph, "paper", dig=8, dgo=16, m=2)
    ref = _run(graph, paper, x, w)
    assert not bool(cp.isnan(ref).any())
    orders = [paper.order, paper.order[::-1].copy(), make(graph, "sequential").order[::-1].copy(),
              np.random.default_rng(5).permutation(graph.num_tasks)]
    for order in orders:
        for blocks in (None, 1, 7):
            y = _run(graph, order, x, w, mode="ready_queue", blocks=blocks)
            assert bool((y == ref).all()), f"blocks={blocks} differs from static"


def test_ready_queue_runs_vgg_scale_reversed_and_the_trace_covers_every_task():
    layer = Layer(8, 64, 32, 32, 64, "reversed")
    part = Partition(tiles_per_group=32, input_channels_per_task=32, gemm_mats_per_task=4,
                     gemm_k_per_task=64, output_channels_per_task=32, filter_k_per_task=4, threads=256)
    graph = build_graph(layer, WinogradVariant(4), part)
    x, w = device_inputs(layer, 3)
    rev = make(graph, "sequential").order[::-1].copy()
    conv = FusedConv(graph, rev, mode="ready_queue", trace=True)
    y = run_conv(conv, layer, x, w)
    assert bool((y == _run(graph, make(graph, "sequential"), x, w)).all())
    rec = conv.trace_records()
    assert np.array_equal(rec["task"], rev)
    assert (rec["start_us"] <= rec["ready_us"]).all() and (rec["ready_us"] <= rec["end_us"]).all()
    assert conv.grid == min(graph.num_tasks, resident_capacity(cp, conv.kernel, part.threads))


def test_a_task_that_never_becomes_ready_raises_within_the_limit_and_the_next_launch_is_right():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    x, w = device_inputs(LAYER, 2)
    mp = make(graph, "paper", dig=8, dgo=16, m=2)
    conv = FusedConv(graph, mp, mode="ready_queue", spin_limit_ns=200_000_000)
    last = len(graph.counter_init) - 1
    conv.ctl_init[COUNTERS_AT + STRIDE * last] += 1  # one more parent than will ever signal
    y = cp.full((LAYER.n, LAYER.h, LAYER.w, LAYER.k), cp.nan, dtype=cp.float32)
    t0 = time.perf_counter()
    with pytest.raises(MegasimError, match="ready queue ran dry"):
        conv.run(x, w, y)
    assert time.perf_counter() - t0 < 10
    conv.ctl_init[COUNTERS_AT + STRIDE * last] -= 1
    conv.run(x, w, y)
    assert bool((y == _run(graph, mp, x, w)).all())


def test_ready_queue_grid_is_refused_past_what_fits():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    conv = FusedConv(graph, make(graph, "sequential"), mode="ready_queue")
    capacity = resident_capacity(cp, conv.kernel, SMALL.threads)
    with pytest.raises(MegasimError, match="ready_queue grid of .* exceeds"):
        FusedConv(graph, make(graph, "sequential"), mode="ready_queue", blocks=capacity + 1)
