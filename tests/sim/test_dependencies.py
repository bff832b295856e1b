"""Spin-waits, the dependency distance D_IG, and deadlock reporting."""
import numpy as np
import pytest

from megasim.engine import Kernel, fused_kernels, run_kernels
from megasim.contract.errors import DeadlockError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import Mapping, make
from megasim.contract.problem import Layer, Op
from megasim.app.catalog import load_gpu
from megasim.contract.records import spin_us
from megasim.contract.resources import blocks_per_sm, megakernel_resources


@pytest.fixture(scope="module")
def graph():
    return build_graph(Layer(16, 64, 28, 28, 64, name="deps"))


def gemm_spin_us(graph, **params):
    gpu = load_gpu("h200").with_model(sm_count=8)
    run = run_kernels(graph, fused_kernels(graph, make(graph, "paper", **params)), gpu)
    rec = run.records
    return spin_us(rec[rec["op"] == Op.GEMM]).sum()


def test_dig_zero_spins_and_large_dig_does_not(graph):
    tight = gemm_spin_us(graph, dig=0, dgo=4000, m=1)
    loose = gemm_spin_us(graph, dig=4000, dgo=4000, m=1)
    assert tight > 100.0
    assert loose < 0.01 * tight


def _most_resident(rec: np.ndarray) -> int:
    """Most blocks an SM held at once, each from its dispatch to its end (an end frees the slot first)."""
    most = 0
    for sm in np.unique(rec["sm"]):
        on = rec[rec["sm"] == sm]
        times = np.concatenate([on["end_us"], on["dispatch_us"]])
        steps = np.concatenate([-np.ones(len(on)), np.ones(len(on))])
        order = np.lexsort((steps, times))
        most = max(most, int(np.cumsum(steps[order]).max()))
    return most


def test_spinning_blocks_hold_their_slots_until_their_parents_end(graph):
    gpu = load_gpu("h200")
    rec = run_kernels(graph, fused_kernels(graph, make(graph, "interleave")), gpu).records
    end_of_task = np.empty(graph.num_tasks)
    end_of_task[rec["task"]] = rec["end_us"]
    spinning = rec[spin_us(rec) > 0]
    assert len(spinning) > 0
    for block in spinning:
        waits = graph.waits_on[block["task"]]
        parents = np.flatnonzero(np.isin(graph.signals, waits[waits >= 0]))
        assert block["ready_us"] >= end_of_task[parents].max()
    assert _most_resident(rec) == blocks_per_sm(gpu, megakernel_resources(graph.partition))


def test_children_start_work_only_after_parents_end(graph):
    gpu = load_gpu("h200")
    run = run_kernels(graph, fused_kernels(graph, make(graph, "paper", dig=0, dgo=0, m=1)), gpu)
    rec = run.records
    end_of_task = np.empty(graph.num_tasks)
    end_of_task[rec["task"]] = rec["end_us"]
    ready_of_task = np.empty(graph.num_tasks)
    ready_of_task[rec["task"]] = rec["ready_us"]
    for t in np.flatnonzero(graph.op == Op.GEMM)[:50]:
        parents = np.flatnonzero(np.isin(graph.signals, graph.waits_on[t]))
        assert ready_of_task[t] >= end_of_task[parents].max()


def test_deadlock_is_reported_not_hung(graph):
    gpu = load_gpu("h200")
    one_slot = gpu.with_model(sm_count=1, max_blocks_per_sm=1)
    reversed_order = Mapping(np.arange(graph.num_tasks)[::-1].copy())
    with pytest.raises(DeadlockError, match=r"block 0 .*waits on counter"):
        run_kernels(graph, [Kernel(reversed_order.order, megakernel_resources(graph.partition), True)], one_slot)
