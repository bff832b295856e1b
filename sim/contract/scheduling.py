"""How the megakernel's blocks find their tasks: the scheduling modes both executors implement.

- `static`: one block per task. Each new block takes a logical index from an atomic ticket (blocks do
  not start in blockIdx order), so every task pays a block launch: the hardware dispatcher's latency
  and the block's prologue.
- `persistent`: as many blocks as fit at once (SMs x blocks per SM, the build's own occupancy). Each
  block loops: ticket, task-map read, wait, run, signal. Only the first wave pays a block launch; a
  grid larger than what can be co-resident would deadlock (a waiting block could hold the slot its
  parent needs), so the launcher refuses one.
- `ready_queue`: the persistent grid, but a block takes only a task whose parents are done, from a
  device FIFO (one atomic per pop, so no two blocks contend for a slot). When a counter reaches zero,
  the block that zeroed it pushes every waiter whose last unmet wait that was. Tasks that wait on
  nothing (roots) enter the FIFO through a window the size of the grid, in mapping order: the first
  `grid` at launch, then one more each time a root finishes. So children queue behind at most a grid's
  worth of roots, which keeps the mapping's producer-consumer locality; a FIFO holding every root from
  the start ran all input transforms before any GEMM (docs/performance.md). Nothing spins on a counter,
  and the order is a priority, not a total order: an order a static launch deadlocks on runs here.

Dependencies and output are the same in every mode; only when and where a task starts differ, which
is what the simulator's persistent loop (no dispatch latency after the first wave) and its ready-queue
dispatch stand for.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import NO_COUNTER, TaskGraph
from megasim.contract.modes import MODES, RESIDENT_MODES, check_mode  # noqa: F401  (their older home)


@dataclass(frozen=True, eq=False)
class ReadyQueue:
    """The ready-queue mode's start state, in logical blocks (positions in the mapping's order).

    Both executors read it: the CUDA build copies it to the device, the engine dispatches from it, so
    the two push the same tasks in the same order.
    """

    roots: np.ndarray           # int32: blocks that wait on nothing, ascending: they enter the FIFO in this order
    pending: np.ndarray         # int32 per block: counters it waits on
    waiter_offsets: np.ndarray  # int32[num_counters + 1]: CSR rows of `waiters`
    waiters: np.ndarray         # int32: per counter, the blocks waiting on it, ascending

    def waiters_of(self, counter: int) -> np.ndarray:
        return self.waiters[self.waiter_offsets[counter]:self.waiter_offsets[counter + 1]]

    def zeroed(self, pending: list, counter: int) -> list:
        """Counter `counter` reached zero: decrement its waiters' `pending` counts (in place) and return
        those it made ready, in push order. The kernel's `ms_push_waiters` does the same on the device."""
        out = []
        for w in self.waiters_of(counter).tolist():
            pending[w] -= 1
            if pending[w] == 0:
                out.append(w)
        return out


class RootWindow:
    """The roots' way into the FIFO, in both executors: the first `window` (the grid) at launch, then the
    next one each time a root finishes."""

    __slots__ = ("roots", "let_in")

    def __init__(self, roots: list, window: int):
        self.roots, self.let_in = roots, min(window, len(roots))

    def first(self) -> list:
        """The roots queued at launch."""
        return self.roots[:self.let_in]

    def after_root(self) -> list:
        """A root finished: the root it lets in, if any are left."""
        if self.let_in >= len(self.roots):
            return []
        self.let_in += 1
        return [self.roots[self.let_in - 1]]


def ran_dry(never, at: str = "") -> str:
    """The error of a ready queue that empties with tasks left, from any executor: `never` lists the blocks
    that never became ready (or says in words what the executor knows of them), `at` when it stopped."""
    which = never if isinstance(never, str) else f"{len(never)} tasks never became ready (first blocks {never[:5]})"
    return f"ready queue ran dry{at}: {which}; a counter they wait on never reaches zero"


def ready_queue(graph: TaskGraph, order) -> ReadyQueue:
    """The queue's start state for `order` (logical block -> task id)."""
    order = np.asarray(order, dtype=np.int64)
    waits = graph.waits_on[order]
    live = waits != NO_COUNTER
    if (graph.counter_init[waits[live]] <= 0).any():
        raise MegasimError("ready queue: a task waits on a counter that starts at zero, which no parent zeroes")
    pending = live.sum(axis=1).astype(np.int32)
    blocks, slot = np.nonzero(live)
    counters = waits[blocks, slot]
    by_counter = np.lexsort((blocks, counters))
    offsets = np.zeros(len(graph.counter_init) + 1, dtype=np.int32)
    np.cumsum(np.bincount(counters, minlength=len(graph.counter_init)), out=offsets[1:])
    return ReadyQueue(roots=np.flatnonzero(pending == 0).astype(np.int32), pending=pending,
                      waiter_offsets=offsets, waiters=blocks[by_counter].astype(np.int32))


def serial_queue_order(graph: TaskGraph, order, window: int = 1) -> np.ndarray:
    """The task ids in the order one block serving the ready queue would run them (a root window of
    `window`): how the NumPy emulator executes the ready-queue mode. A task that never becomes ready is
    an error."""
    order = np.asarray(order, dtype=np.int64)
    plan = ready_queue(graph, order)
    roots = RootWindow(plan.roots.tolist(), window)
    fifo, pending = deque(roots.first()), plan.pending.tolist()
    remaining, signals = graph.counter_init.tolist(), graph.signals[order].tolist()
    served = []
    while fifo:
        b = fifo.popleft()
        served.append(b)
        c = signals[b]
        if c != NO_COUNTER:
            remaining[c] -= 1
            if remaining[c] == 0:
                fifo.extend(plan.zeroed(pending, c))
        if plan.pending[b] == 0:
            fifo.extend(roots.after_root())
    if len(served) < len(order):
        never = sorted(set(range(len(order))) - set(served))
        raise MegasimError(ran_dry(never))
    return order[served]
