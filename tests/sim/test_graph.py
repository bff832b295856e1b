"""The task graph's counts (paper 5.1), FLOPs and bytes, from arithmetic."""
import numpy as np
import pytest

from megasim.contract.graph import build_graph
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.regions import Buffer


def test_resnet2_counts_match_section_5_1():
    g = build_graph(Layer(64, 128, 28, 28, 128), WinogradVariant(4), Partition())
    geo = g.geometry
    assert (geo.n_f, geo.n_g, geo.s_i, geo.s_g, geo.s_o) == (32, 98, 4, 18, 4)
    assert g.num_tasks == 32 + 98 * (4 + 18 + 4)
    assert geo.num_tiles == 64 * 7 * 7


def test_vgg1_has_50176_tiles():
    assert build_graph(Layer(64, 128, 112, 112, 128)).geometry.num_tiles == 50_176


def test_gemm_flops_are_the_batched_gemm():
    layer = Layer(2, 48, 17, 13, 40)
    g = build_graph(layer, WinogradVariant(2), Partition(gemm_k_per_task=16, gemm_mats_per_task=5))
    tiles = g.geometry.num_tiles
    assert g.flops[g.tasks_of(Op.GEMM)].sum() == 2 * tiles * layer.c * layer.k * 16


@pytest.mark.parametrize("fk, bk", [(4, 64), (3, 4), (5, 7)])
def test_every_u_byte_is_written_once(fk, bk):
    layer = Layer(1, 6, 8, 8, 20)
    g = build_graph(layer, partition=Partition(filter_k_per_task=fk, gemm_k_per_task=bk))
    kind = g.regions.kind[g.write_region]
    assert g.write_bytes[kind == Buffer.U].sum() == 36 * layer.c * layer.k * 4


def test_output_bytes_count_only_valid_pixels_of_ragged_tiles():
    layer = Layer(3, 4, 10, 9, 5)
    g = build_graph(layer, partition=Partition(tiles_per_group=5))
    kind = g.regions.kind[g.write_region]
    assert g.write_bytes[kind == Buffer.OUTPUT].sum() == layer.n * layer.h * layer.w * layer.k * 4


def test_counters_start_at_their_parent_counts():
    g = build_graph(Layer(2, 16, 12, 12, 16))
    for c in range(len(g.counter_init)):
        assert g.counter_init[c] == np.count_nonzero(g.signals == c)


def test_min_dram_bytes_is_one_pass_over_x_w_and_y():
    layer = Layer(2, 3, 5, 7, 4)
    x, w, y = layer.n * layer.h * layer.w * layer.c, layer.k * 9 * layer.c, layer.n * layer.h * layer.w * layer.k
    assert layer.min_dram_bytes == 4 * (x + w + y)
