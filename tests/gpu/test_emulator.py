"""The task-graph emulator: every registered mapping computes the convolution, illegal ones are caught.

The reference is the float64 direct convolution, so a task that reads the
wrong slice, skips a ragged edge or runs before its inputs exist fails here.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from megasim.gpu.emulator import EmulatorBuffers, emulate, run_task
from megasim.gpu.winograd import direct_conv
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import MAPPINGS, Mapping, make
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant

FP32_TOL = {2: 1e-6, 4: 1e-5, 6: 5e-5}


def random_problem(layer, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((layer.n, layer.h, layer.w, layer.c)),
            rng.standard_normal((layer.k, 3, 3, layer.c)))


@st.composite
def problems(draw):
    """Small ragged layers (N=1, C=3) with partitions that leave short last blocks."""
    m = draw(st.sampled_from([2, 4, 6]))
    k = draw(st.integers(1, 5))
    layer = Layer(n=1, c=3, h=draw(st.integers(1, 3 * m + 1)), w=draw(st.integers(1, 3 * m + 1)), k=k)
    part = Partition(tiles_per_group=draw(st.integers(1, 4)), input_channels_per_task=draw(st.integers(1, 3)),
                     gemm_mats_per_task=draw(st.integers(1, (m + 2) ** 2)),
                     gemm_k_per_task=draw(st.integers(1, k + 1)),
                     output_channels_per_task=draw(st.integers(1, k + 1)),
                     filter_k_per_task=draw(st.integers(1, k + 1)), threads=32)
    return build_graph(layer, WinogradVariant(m), part), draw(st.integers(0, 2**16))


def relative_error_scale(x, w):
    return np.linalg.norm(direct_conv(np.abs(x), np.abs(w)))


@pytest.mark.parametrize("name", MAPPINGS.names(), ids=str)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=problems(), data=st.data())
def test_every_strategy_computes_the_convolution(drawn_options, name, case, data):
    graph, seed = case
    mapping = make(graph, name, **data.draw(drawn_options(MAPPINGS.get(name), small=40)))
    x, w = random_problem(graph.layer, seed)
    ref = direct_conv(x, w)
    np.testing.assert_allclose(emulate(graph, mapping, x, w, np.float64), ref, rtol=1e-10, atol=1e-11)
    y32 = emulate(graph, mapping, x, w)
    assert y32.dtype == np.float32
    assert np.linalg.norm(y32 - ref) <= FP32_TOL[graph.variant.m] * relative_error_scale(x, w)


@pytest.fixture
def tiny_graph(tiny_layer, f43, tiny_partition):
    graph = build_graph(tiny_layer, f43, tiny_partition)
    assert graph.geometry.n_g > 1 and graph.geometry.num_tiles % tiny_partition.tiles_per_group
    assert tiny_layer.h % f43.m and tiny_layer.w % f43.m
    return graph


def test_result_does_not_depend_on_the_order(tiny_graph):
    """Each task's arithmetic is fixed by the contract, so legal orders agree bit for bit."""
    x, w = random_problem(tiny_graph.layer, 3)
    outputs = [emulate(tiny_graph, make(tiny_graph, name), x, w) for name in MAPPINGS.names()]
    for y in outputs[1:]:
        assert np.array_equal(y, outputs[0])


def test_reversed_mapping_is_refused_at_block_zero(tiny_graph):
    x, w = random_problem(tiny_graph.layer, 4)
    last = tiny_graph.num_tasks - 1
    reversed_order = Mapping(order=np.arange(tiny_graph.num_tasks)[::-1].copy())
    counter = tiny_graph.waits_on[last, 0]
    with pytest.raises(MegasimError, match=rf"block 0 \(task {last}, output_transform .*counter {counter}\b"):
        emulate(tiny_graph, reversed_order, x, w)


def test_gemm_before_its_last_input_is_refused(tiny_graph):
    """Swap group 0's first GEMM with the last input transform of group 0."""
    x, w = random_problem(tiny_graph.layer, 5)
    order = np.arange(tiny_graph.num_tasks)
    last_input = tiny_graph.tasks_of(Op.INPUT_TRANSFORM)[tiny_graph.geometry.s_i - 1]
    first_gemm = tiny_graph.tasks_of(Op.GEMM)[0]
    order[[last_input, first_gemm]] = order[[first_gemm, last_input]]
    with pytest.raises(MegasimError, match=rf"block {last_input} \(task {first_gemm}, gemm 0 of group 0\)"):
        emulate(tiny_graph, Mapping(order=order), x, w)


def test_duplicate_and_missing_tasks_are_refused(tiny_graph):
    x, w = random_problem(tiny_graph.layer, 6)
    order = np.arange(tiny_graph.num_tasks)
    with pytest.raises(MegasimError, match="block 1 .* second time"):
        emulate(tiny_graph, Mapping(order=np.concatenate([[0, 0], order[2:]])), x, w)
    with pytest.raises(MegasimError, match="1 task\\(s\\) never run"):
        emulate(tiny_graph, Mapping(order=order[:-1]), x, w)


def test_wrong_input_shape_is_refused(tiny_graph):
    x, w = random_problem(tiny_graph.layer, 7)
    with pytest.raises(MegasimError, match="x has shape"):
        emulate(tiny_graph, make(tiny_graph, "sequential"), x[:, :-1], w)


def test_skipped_output_task_leaves_exactly_its_slice_unwritten(tiny_graph):
    """Buffers start as NaN, so output coverage is visible: one missing task, one NaN hole."""
    x, w = random_problem(tiny_graph.layer, 8)
    ws = EmulatorBuffers.allocate(tiny_graph, x, w)
    skipped = tiny_graph.tasks_of(Op.OUTPUT_TRANSFORM)[1]
    for task in range(tiny_graph.num_tasks):
        if task != skipped:
            run_task(tiny_graph, ws, task)
    hole = np.isnan(ws.y)
    assert tiny_graph.group[skipped] == 0
    ks = tiny_graph.ranges.output_k[int(tiny_graph.index[skipped])]
    m, tw = tiny_graph.variant.m, tiny_graph.geometry.tiles_w
    expected = np.zeros_like(hole)
    for tile in range(tiny_graph.partition.tiles_per_group):
        ti, tj = divmod(tile, tw)
        expected[0, ti * m:ti * m + m, tj * m:tj * m + m, ks] = True
    assert np.array_equal(hole, expected)
