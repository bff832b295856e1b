"""The ready-queue scheduling mode: its start state, the order one block would serve it, and the engine.

The mapping's order is a priority in this mode, so an order that deadlocks a static launch (every child
before its parents) must run, in the model, in the emulator and (tests/gpu/test_ready_queue.py) on the GPU.
"""
from dataclasses import replace

import numpy as np
import pytest

from megasim.contract.errors import DeadlockError, MegasimError
from megasim.contract.graph import NO_COUNTER, build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import Mapping, make
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.scheduling import ready_queue, serial_queue_order
from megasim.engine import Kernel, fused_kernels, run_kernels
from megasim.gpu.interpreter import EmulatorInterpreter

from .conftest import BLOCK, toy_gpu

LAYER = Layer(2, 24, 13, 11, 40, "rq")
PART = Partition(tiles_per_group=8, input_channels_per_task=8, gemm_mats_per_task=6,
                 gemm_k_per_task=16, output_channels_per_task=8, filter_k_per_task=8, threads=64)


@pytest.fixture(scope="module")
def graph():
    return build_graph(LAYER, WinogradVariant(4), PART)


def _orders(graph):
    paper = make(graph, "paper").order
    return {"paper": paper, "reversed": paper[::-1].copy(),
            "shuffled": np.random.default_rng(0).permutation(graph.num_tasks)}


def test_start_state_lists_every_unmet_wait_once(graph):
    for order in _orders(graph).values():
        plan = ready_queue(graph, order)
        waits = graph.waits_on[order]
        assert np.array_equal(plan.pending, (waits != NO_COUNTER).sum(axis=1))
        assert np.array_equal(plan.roots, np.flatnonzero(plan.pending == 0))
        assert set(graph.op[order[plan.roots]]) == {Op.FILTER_TRANSFORM, Op.INPUT_TRANSFORM}
        for c in range(len(graph.counter_init)):
            mine = plan.waiters_of(c)
            assert np.array_equal(mine, np.flatnonzero((waits == c).any(axis=1)))


def test_one_block_serves_every_task_after_its_parents(graph):
    for name, order in _orders(graph).items():
        served = serial_queue_order(graph, order)
        assert sorted(served.tolist()) == list(range(graph.num_tasks)), name
        done = np.zeros(graph.num_tasks, dtype=bool)
        remaining = graph.counter_init.copy()
        for task in served:
            assert all(c == NO_COUNTER or remaining[c] == 0 for c in graph.waits_on[task]), name
            if graph.signals[task] != NO_COUNTER:
                remaining[graph.signals[task]] -= 1
            done[task] = True


def test_order_is_a_priority_roots_enter_in_mapping_order_through_a_window(graph):
    for order in _orders(graph).values():
        roots = order[ready_queue(graph, order).roots].tolist()
        for window in (1, 4, len(roots)):
            served = serial_queue_order(graph, order, window).tolist()
            is_root = set(roots)
            assert [t for t in served if t in is_root] == roots
    paper = _orders(graph)["paper"]
    first_gemm = lambda served: next(i for i, t in enumerate(served) if graph.op[t] == Op.GEMM)
    roots = ready_queue(graph, paper).roots
    assert first_gemm(serial_queue_order(graph, paper, 1).tolist()) < first_gemm(
        serial_queue_order(graph, paper, len(roots)).tolist()) == len(roots)


def test_a_counter_that_never_reaches_zero_is_an_error_not_a_hang(graph):
    broken = replace(graph, counter_init=graph.counter_init + np.eye(len(graph.counter_init), dtype=np.int32)[-1])
    with pytest.raises(MegasimError, match="ready queue ran dry"):
        serial_queue_order(broken, make(broken, "paper").order)
    with pytest.raises(DeadlockError, match="ready queue ran dry"):
        run_kernels(broken, fused_kernels(broken, make(broken, "paper"), "ready_queue"), toy_gpu())


def test_emulator_runs_a_reversed_order_and_matches_static(graph):
    emu = EmulatorInterpreter()
    paper = make(graph, "paper")
    ref = emu.run(graph, paper, RunConfig(seed=3)).output
    rev = Mapping(paper.order[::-1].copy())
    with pytest.raises(MegasimError):
        emu.run(graph, rev, RunConfig(seed=3))
    out = emu.run(graph, rev, RunConfig(seed=3, mode="ready_queue"))
    assert np.array_equal(out.output, ref)
    assert np.array_equal(out.records["task"], rev.order)


def test_engine_runs_orders_that_deadlock_static(graph):
    gpu = toy_gpu(sm_count=2, max_blocks_per_sm=2)
    rev = Mapping(make(graph, "paper").order[::-1].copy())
    with pytest.raises(DeadlockError):
        run_kernels(graph, fused_kernels(graph, rev), gpu)
    raw = run_kernels(graph, fused_kernels(graph, rev, "ready_queue"), gpu)
    rec = raw.records
    assert np.array_equal(rec["task"], rev.order) and (rec["end_us"] > 0).all()
    end = dict(zip(rec["task"].tolist(), rec["end_us"].tolist()))
    ready = dict(zip(rec["task"].tolist(), rec["ready_us"].tolist()))
    for t in range(graph.num_tasks):
        for c in graph.waits_on[t]:
            if c != NO_COUNTER:
                assert all(end[p] <= ready[t] for p in graph.parents_of_counter(c).tolist())


def test_ready_queue_pays_a_block_launch_once_like_persistent():
    """Independent tasks on one slot: the ready queue costs what the persistent loop costs."""
    from .conftest import synthetic_graph
    gpu = toy_gpu(sm_count=1, max_blocks_per_sm=1, tb_dispatch_latency_cycles=300, task_overhead_cycles=1000)
    n = 8
    g = synthetic_graph([Op.GEMM] * n, [1000.0] * n, [0] * n)
    ready = ready_queue(g, np.arange(n))
    persistent = run_kernels(g, [Kernel(np.arange(n), BLOCK, True, persistent=True)], gpu, quantum=0.0)
    queued = run_kernels(g, [Kernel(np.arange(n), BLOCK, True, ready=ready)], gpu, quantum=0.0)
    assert queued.total_cycles == pytest.approx(persistent.total_cycles)
