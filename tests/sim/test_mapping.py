"""Every strategy yields a legal permutation; validate() rejects illegal ones by name."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import MAPPINGS, Mapping, infusible_count, make, validate
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant

layers = st.builds(lambda n, c, h, w, k: Layer(n, c, h, w, k, name="rand"),
                   st.integers(1, 3), st.integers(1, 70), st.integers(1, 30), st.integers(1, 30), st.integers(1, 70))
partitions = st.builds(Partition, tiles_per_group=st.integers(1, 40), input_channels_per_task=st.integers(1, 40),
                       gemm_mats_per_task=st.integers(1, 36), gemm_k_per_task=st.integers(1, 70),
                       output_channels_per_task=st.integers(1, 40), filter_k_per_task=st.integers(1, 16))


@pytest.mark.parametrize("name", MAPPINGS.names(), ids=str)
@settings(max_examples=40, deadline=None)
@given(layer=layers, part=partitions, m=st.sampled_from([2, 4, 6]), data=st.data())
def test_every_strategy_is_a_valid_permutation(drawn_options, name, layer, part, m, data):
    graph = build_graph(layer, WinogradVariant(m), part)
    opts = data.draw(drawn_options(MAPPINGS.get(name), small=300))
    mapping = make(graph, name, **opts)
    validate(graph, mapping)
    assert sorted(mapping.order.tolist()) == list(range(graph.num_tasks))


@pytest.fixture(scope="module")
def graph():
    return build_graph(Layer(8, 64, 56, 56, 64, name="m"))


def test_duplicate_is_rejected_with_its_blocks(graph):
    order = np.arange(graph.num_tasks)
    order[5] = order[4]
    with pytest.raises(MegasimError, match=r"tasks 4 appear more than once \(blocks 4, 5\)"):
        validate(graph, Mapping(order))


def test_missing_and_out_of_range_are_rejected(graph):
    with pytest.raises(MegasimError, match="missing"):
        validate(graph, Mapping(np.arange(graph.num_tasks - 1)))
    with pytest.raises(MegasimError, match="outside"):
        validate(graph, Mapping(np.arange(graph.num_tasks) + 1))


def test_child_before_parent_names_both_blocks(graph):
    order = np.arange(graph.num_tasks)
    first_gemm = graph.tasks_of(Op.GEMM)[0]
    first_input = graph.tasks_of(Op.INPUT_TRANSFORM)[0]
    order[[first_gemm, first_input]] = order[[first_input, first_gemm]]
    with pytest.raises(MegasimError, match=rf"block {first_input} \(task {first_gemm}, gemm of group 0\) "
                                           rf"comes before its parent block\(s\) {first_input + 1}, {first_gemm}"):
        validate(graph, Mapping(order))


def test_unknown_strategy_and_option_list_the_known_ones(graph):
    with pytest.raises(MegasimError, match="known: " + ", ".join(MAPPINGS.names())):
        make(graph, "greedy")
    with pytest.raises(MegasimError, match="takes"):
        make(graph, "sequential", dig=3)


def test_paper_mapping_keeps_the_dependency_distance(graph):
    mapping = make(graph, "paper", dig=40, dgo=60, m=2)
    pos = mapping.position()
    g = graph.geometry
    first_gemm_of_group0 = pos[graph.tasks_of(Op.GEMM)[:g.s_g]].min()
    last_input_of_group0 = pos[graph.tasks_of(Op.INPUT_TRANSFORM)[:g.s_i]].max()
    assert first_gemm_of_group0 - last_input_of_group0 >= 40 - g.s_i
    assert np.all(pos[graph.tasks_of(Op.FILTER_TRANSFORM)] < g.n_f)


def test_paper_mapping_puts_m_gemms_of_one_column_together(graph):
    mapping = make(graph, "paper", dig=40, dgo=60, m=4)
    gemm_in_order = [t for t in mapping.order if graph.op[t] == Op.GEMM]
    first = np.array(gemm_in_order[:4])
    assert len(set(graph.index[first])) == 1
    assert list(graph.group[first]) == [0, 1, 2, 3]


def test_infusible_counts_the_sequential_stages(graph):
    seq = make(graph, "sequential")
    mixed = make(graph, "paper", dig=40, dgo=60, m=2)
    assert infusible_count(graph, mixed, 64) < infusible_count(graph, seq, 64)
