"""The paper's three reuse types (section 5.4), seen through the L2 model."""
import numpy as np
import pytest

from megasim.engine import Kernel, fused_kernels, nonfused_kernels, run_kernels
from megasim.engine.l2 import hit_rate
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Op, Partition

from .conftest import BLOCK, synthetic_graph, toy_gpu


def test_repeated_region_hits_within_capacity_and_misses_beyond():
    # task i reads region i % 10: a cyclic sweep over 10 regions of 1 kB
    n = 200
    g = synthetic_graph([Op.INPUT_TRANSFORM] * n, [1.0] * n, [1000] * n, shared_region=np.arange(n) % 10)
    fits = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], toy_gpu(l2_bytes=20_000))
    spills = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], toy_gpu(l2_bytes=5_000))
    assert fits.l2_stats["INPUT"]["miss_bytes"] == 10 * 1000
    assert spills.l2_stats["INPUT"]["hit_bytes"] == 0


@pytest.mark.parametrize("m", [2, 4, 8])
def test_gemm_filter_reuse_in_groups_of_m_is_m_minus_1_over_m(m):
    """(b): the M GEMMs of a column share one U slice; nothing survives between columns."""
    layer = Layer(32, 64, 28, 28, 64, name="reuse")
    part = Partition(tiles_per_group=32, gemm_mats_per_task=4, gemm_k_per_task=32)
    graph = build_graph(layer, partition=part)
    # inside a column at most one input transform (~250 kB) comes between two reads of the slice;
    # between columns come S_G * M GEMMs and M * S_I input transforms (> 3 MB)
    gpu = toy_gpu(l2_bytes=600_000, sm_count=2, max_blocks_per_sm=1)
    mapping = make(graph, "paper", dig=64, dgo=64, m=m)
    run = run_kernels(graph, fused_kernels(graph, mapping), gpu)
    assert hit_rate(run.l2_stats, "U") == pytest.approx((m - 1) / m, abs=0.03)


def test_producer_consumer_reuse_only_when_v_fits():
    """(c): the GEMM kernel re-reads V from L2 only if all of V is still there."""
    layer = Layer(8, 32, 28, 28, 32, name="pc")
    graph = build_graph(layer)
    v_bytes = 36 * graph.geometry.num_tiles * layer.c * 4
    hit = {}
    for label, l2 in (("fits", 3 * v_bytes), ("spills", v_bytes // 8)):
        hit[label] = hit_rate(run_kernels(graph, nonfused_kernels(graph), toy_gpu(l2_bytes=l2)).l2_stats, "V")
    assert hit["fits"] > 0.99
    assert hit["spills"] < 0.05


def test_fused_small_distance_keeps_v_in_a_small_l2():
    """(c) in the megakernel: with children close to parents, only a window of V must fit."""
    layer = Layer(8, 32, 28, 28, 32, name="pc")
    graph = build_graph(layer)
    v_bytes = 36 * graph.geometry.num_tiles * layer.c * 4
    gpu = toy_gpu(l2_bytes=v_bytes // 2)
    hit = {}
    for name, params in (("paper", dict(dig=1, dgo=8, m=1)), ("sequential", {})):
        run = run_kernels(graph, fused_kernels(graph, make(graph, name, **params)), gpu)
        hit[name] = hit_rate(run.l2_stats, "V")
    assert hit["paper"] > 0.9
    assert hit["sequential"] < 0.05


def test_neighbouring_input_transforms_share_halo_rows():
    """(a): a group's halo band was read by the group above it."""
    layer = Layer(1, 32, 64, 64, 32, name="halo")
    graph = build_graph(layer, partition=Partition(tiles_per_group=16))
    run = run_kernels(graph, nonfused_kernels(graph), toy_gpu(l2_bytes=1 << 30))
    inp = run.l2_stats["INPUT"]
    assert inp["hit_bytes"] > 0.2 * inp["miss_bytes"]
    assert inp["miss_bytes"] == layer.n * layer.c * layer.h * layer.w * 4
