"""The GPU model: kernels of thread blocks on SMs, in SimPy time (core cycles).

A kernel is a list of tasks in logical block order plus one block footprint. Its blocks go out one at a
time, in order, as slots free (`dispatcher` hands each to the SM its policy picks, one per
`tb_dispatch_interval_cycles`, arriving `tb_dispatch_latency_cycles` later). A thread block then lives as the
megakernel's blocks do (paper Listing 2):

1. start (`task_overhead_cycles` after it lands: ticket, task-map read; a block of a non-fused kernel
   has neither and pays only its dispatch latency):
   poll the counters it waits on. If one is not zero the block spins
   *holding its slot* until the last parent signals, and notices one atomic
   plus half a poll period later; if all are zero already, reading them
   still costs `wait_check_cycles` each (measured per-block traces show it:
   a GEMM, which polls two counters, starts its work about two such reads
   after a transform that polls none);
2. work: it classifies its reads against L2 and puts three jobs in flight at
   once: DRAM bytes (misses + write-backs) on the chip's DRAM queue, all its
   bytes on the L2 queue (its writes land in L2 when it ends), its FLOPs (over the op's efficiency) on its SM's
   FP32 queue. Memory and compute overlap; the block is done when all three
   are, and never sooner than one DRAM latency; then it spends its type's
   fixed cycles and its serial steps times their latency (`step_cycles`,
   `megasim.engine.blocks.block_latency_cycles`). Its FLOPs are the
   ones its code issues, padding included, and its DRAM bytes cost 1 over
   its type's `dram_access_efficiency` (`megasim.contract.work`). With
   `block_work_cv` > 0 each block's work is scaled by a seeded lognormal
   factor, so blocks of one type do not finish in lockstep;
3. end: decrement the counter it signals and free its slot.

Everything here is callbacks on SimPy events (through `Clock`), not one generator per block: a VGG-scale
graph has 60,000 blocks per launch sequence. If the event queue empties with blocks unfinished, every resident
block is spinning on parents that cannot be dispatched: `DeadlockError` names them.

Where this departs from SimPy's idiom, and why (each for speed: the engine rewrite of 2026-11,
docs/performance.md "Simulator speed"):
- Blocks are callbacks, not processes, and the actions due at one instant share one SimPy event
  (`Clock`). Their order at that instant is the order they were scheduled, which is SimPy's own FIFO
  order had each been an event; nothing here adds a tie-break of its own. That order is part of the
  model's answer, not noise to be tidied: run the actions of each instant in reverse and the fused
  ResNet-2 prediction on the calibrated H200 moves by 3.5%, and a quantum of 31.99 cycles instead of
  32 moves it by 6.7%: the model is chaotic at that scale, so any change that moves one action within
  its instant, or one float's last bit, moves predictions by more than the 0.5% the rewrite allowed. So
  the engine keeps every action (queue timers included, early ones too) at the instant and in the
  order it always had, with the same float operations in the same order, and its predictions are bit
  for bit those from before the rewrite (as the committed profiles' predictions are held:
  `tests/sim/test_profile_predictions.py`).
- Per-block state is NumPy columns read through memoryviews (`BlockColumns`), and what a block's jobs
  cost, except its DRAM bytes, is computed for all blocks at once when the run starts.
- A block's remaining jobs are a count in a column that its queues count down themselves; a queue
  calls back only for a block whose last job ended: no closure per block, one call per block.
- This module and the others `megasim.engine.compiled` names are compiled where the package was built with
  Cython (`core.pxd` types the fields and hot locals); the same source runs as Python elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from megasim.engine.blocks import BlockColumns, run_scale, view
from megasim.engine.clock import Clock
from megasim.engine.deadlock import deadlock_message
from megasim.engine.dispatch import make_policy
from megasim.engine.l2 import L2Model
from megasim.engine.neighbours import GemmNeighbours
from megasim.engine.psqueue import PSQueue
from megasim.engine.ready_fifo import QueueState
from megasim.contract.errors import DeadlockError
from megasim.contract.graph import NO_COUNTER, TaskGraph
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.resources import StageResources, blocks_per_sm
from megasim.contract.scheduling import ReadyQueue
from megasim.engine.model import GPUModel

_NO_COUNTER = NO_COUNTER  # a C int where this module is compiled (core.pxd)
_GEMM = int(Op.GEMM)  # likewise


@dataclass(frozen=True, eq=False)
class Kernel:
    """One launch: tasks in logical order, one block footprint, and whether blocks poll counters.

    `preceding_launches` tiny launches go first (the megakernel's counter reset), each one launch gap.
    A `persistent` kernel keeps its first wave of blocks resident: a later task starts in the slot its
    predecessor freed without a block launch (`megasim.contract.scheduling`). A kernel with a `ready`
    queue is persistent too, but hands a slot only a task whose parents are done, in queue order.
    `gemm` is the GEMM task's body its code runs (`megasim.contract.resources.GEMM_BODIES`), `precision` its
    products' arithmetic (`megasim.contract.resources.PRECISIONS`; "3xtf32" needs a `gemm_precision` law).
    """

    tasks: np.ndarray
    resources: StageResources
    check_deps: bool
    name: str = "kernel"
    preceding_launches: int = 0
    persistent: bool = False
    ready: ReadyQueue | None = None
    gemm: str = "generic"
    precision: str = "fp32"


@dataclass(frozen=True, eq=False)
class RawRun:
    records: np.ndarray
    block_dram_bytes: np.ndarray
    kernel_spans_cycles: list
    l2_stats: dict
    total_cycles: float


class _Machine:
    def __init__(self, graph: TaskGraph, gpu: GPUModel, kernels, policy: str, policy_options: dict | None,
                 quantum: float, seed: int):
        self.env = env = simpy.Environment()
        self.clock = Clock(env, quantum)
        self.call_later = self.clock.call_later
        self.gpu, self.graph, self.kernels = gpu, graph, kernels
        self.policy_name, self.policy_options = policy, policy_options
        model = gpu.model
        self.l2 = L2Model(graph, gpu.l2_bytes * model.l2_usable_fraction)
        self.l2_read, self.l2_write = self.l2.read, self.l2.write
        self.waits = view(graph.waits_on.reshape(-1))
        self.signals = view(graph.signals)
        self.remaining = graph.counter_init.tolist()
        self.waiters: dict[int, list[int]] = {}
        self.wake_delay = gpu.atomic_latency_cycles + gpu.spin_poll_cycles / 2
        self.push_delay = gpu.atomic_latency_cycles + gpu.spin_poll_cycles / 2
        self.overhead = model.task_overhead_cycles
        self.check_cost = model.wait_check_cycles
        self.dram_cost = [1.0 / model.dram_access_efficiency.get(OP_NAMES[op], 1.0) for op in Op]
        order = np.concatenate([k.tasks for k in kernels])
        self.blocks = cols = BlockColumns(order, graph, gpu, run_scale(kernels, gpu, seed, graph.op), kernels[0].gemm,
                                          kernels[0].precision)
        self.order, self.sm, self.pending, self.scale, self.op = cols.order, cols.sm, cols.pending, cols.scale, cols.op
        self.t_dispatch, self.t_start, self.t_ready, self.t_end = cols.t_dispatch, cols.t_start, cols.t_ready, cols.t_end
        self.written, self.moved, self.fp, self.floor, self.added = cols.written, cols.moved, cols.fp, cols.floor, cols.added
        self.dram_bytes, self.blocked = cols.dram_bytes, cols.blocked
        self.spans, self.seed = [], seed
        self.kernel_index = -1
        self.done_total = 0

    # dispatcher -------------------------------------------------------
    def launch(self, now: float, k: int) -> None:
        kern = self.kernels[k]
        gpu = self.gpu
        self.kernel_index = k
        self.base = sum(len(x.tasks) for x in self.kernels[:k])
        self.size = len(kern.tasks)
        self.next = 0
        self.done_in_kernel = 0
        self.check = kern.check_deps
        slots = blocks_per_sm(gpu, kern.resources)
        self.policy = make_policy(self.policy_name, gpu, slots, self.policy_options)
        self.launched_blocks = slots * gpu.sm_count if kern.persistent or kern.ready else self.size
        self.queue = kern.ready and QueueState(kern.ready, self.base, self.launched_blocks)
        self.threads = kern.resources.threads
        co_resident = min(slots, -(-len(kern.tasks) // gpu.sm_count))
        mem_cap = gpu.sm_bytes_per_cycle / co_resident
        self.dram_submit = PSQueue(self.clock, gpu.dram_bytes_per_cycle, mem_cap, self.pending, self.jobs_done).submit
        self.l2_submit = PSQueue(self.clock, gpu.l2_bytes_per_cycle, mem_cap, self.pending, self.jobs_done).submit
        sharing = gpu.model.law("fp32_sharing")
        if sharing is None:
            fp = [PSQueue(self.clock, gpu.fp32_flops_per_cycle_per_sm, 2.0 * kern.resources.threads, self.pending,
                          self.jobs_done, False) for _ in range(gpu.sm_count)]
        else:
            fp = sharing.fp32_queues(self.clock, gpu, kern.resources.threads, self.op, self.pending, self.jobs_done)
        self.fp_submit = [q.submit for q in fp]
        self.fp_release = [q.release for q in fp] if sharing is not None else None
        self.spins = self.check and not self.queue
        pop = gpu.model.law("queue_pop") if self.queue else None
        self.pops = pop is not None
        self.pop_cycles, self.pop_interval = (pop.pop_cycles, pop.pop_interval_cycles) if pop else (0.0, 0.0)
        self.head_free = now
        self.interval = gpu.tb_dispatch_interval_cycles
        self.latency = gpu.tb_dispatch_latency_cycles + (self.overhead if self.check else 0.0)
        self.looped = float(self.overhead)
        self.next_dispatch_at = now
        self.spans.append([now, None])
        self.pump(now)

    def pump(self, now: float) -> None:
        """Hand out blocks in logical order while the policy finds free slots."""
        nxt, size, queue = self.next, self.size, self.queue
        if nxt >= size or (queue and not queue.fifo):
            return
        t = self.next_dispatch_at
        if t < now:
            t = now
        take, call_later, start, launched = self.policy.take, self.call_later, self.start, self.launched_blocks
        while True:
            sm = take(nxt)
            if sm < 0:
                break
            b = queue.fifo.popleft() if queue else self.base + nxt
            self.sm[b] = sm
            if nxt < launched:
                self.t_dispatch[b] = t
                delay = t - now + self.latency
                t += self.interval
            else:
                self.t_dispatch[b] = now
                delay = self.looped
            if self.pops:
                delay = self._pop(now + delay) - now
            call_later(now, delay, start, b)
            nxt += 1
            if nxt >= size or (queue and not queue.fifo):
                break
        self.next = nxt
        self.next_dispatch_at = t

    # a thread block's life ---------------------------------------------
    def start(self, now: float, b: int) -> None:
        """The block has taken its ticket and read its task: poll its counters."""
        self.t_start[b] = now
        if self.spins:
            i = 2 * self.order[b]
            remaining, waits = self.remaining, self.waits
            pend = 0
            for j in range(i, i + 2):
                c = waits[j]
                if c != _NO_COUNTER and remaining[c] > 0:
                    self.waiters.setdefault(c, []).append(b)
                    pend += 1
            if pend:
                self.blocked[b] = pend
                return
            if self.check_cost:
                polled = (waits[i] != _NO_COUNTER) + (waits[i + 1] != _NO_COUNTER)
                if polled:
                    self.call_later(now, polled * self.check_cost, self.work, b)
                    return
        self.work(now, b)

    def woken(self, now: float, blocks) -> None:
        for b in blocks:
            self.work(now, b)

    def work(self, now: float, b: int) -> None:
        """Dependencies met: classify reads, then DRAM, L2 and FP32 jobs run at once."""
        self.t_ready[b] = now
        dram = self.l2_read(self.order[b]) + self.written[b]
        self.dram_bytes[b] = dram
        if dram:
            self.pending[b] = 3
            self.dram_submit(now, dram * self.scale[b] * self.dram_cost[self.op[b]], b)
        else:
            self.pending[b] = 2
        self.l2_submit(now, self.moved[b], b)
        self.fp_submit[self.sm[b]](now, self.fp[b], b)

    def jobs_done(self, now: float, b: int) -> None:
        """The block's last job finished: it waits out its floor, then its added latency."""
        wait = self.t_ready[b] + self.floor[b] - now
        wait = (wait if wait > 0.0 else 0.0) + self.added[b]
        if wait > 0:
            self.call_later(now, wait, self.finish, b)
        else:
            self.finish(now, b)

    def finish(self, now: float, b: int) -> None:
        self.t_end[b] = now
        if self.fp_release:
            self.fp_release[self.sm[b]](now, b)
        task = self.order[b]
        self.l2_write(task)
        self.done_in_kernel += 1
        hold = 0.0
        if self.check:
            c = self.signals[task]
            if c != _NO_COUNTER:
                left = self.remaining[c] = self.remaining[c] - 1
                if not left:
                    if self.queue:
                        hold = self._push(now, c)
                    else:
                        self._wake(now, self.waiters.pop(c, ()))
            if self.queue:
                root = self.queue.next_root_after(b)
                if root:
                    self.call_later(now, hold + self.push_delay, self._pushed, root)
        if self.done_in_kernel == self.size:
            self.done_total += self.size
            self.policy.release(self.sm[b])
            self.spans[-1][1] = now
            if self.kernel_index + 1 < len(self.kernels):
                gap = self.gpu.us_to_cycles(self.gpu.launch_overhead_us)
                self.call_later(now, gap, self.launch, self.kernel_index + 1)
        elif hold:
            self.call_later(now, hold, self._release, b)
        else:
            self.policy.release(self.sm[b])
            self.pump(now)

    def _pop(self, at: float) -> float:
        """A ready-queue pop wanted at `at` (a `queue_pop` law): when its task can start."""
        t = at if at > self.head_free else self.head_free
        self.head_free = t + self.pop_interval
        return t + self.pop_cycles

    def _release(self, now: float, b: int) -> None:
        self.policy.release(self.sm[b])
        self.pump(now)

    def _wake(self, now: float, waiting) -> None:
        woken = []
        blocked = self.blocked
        for b in waiting:
            left = blocked[b] - 1
            blocked[b] = left
            if left == 0:
                woken.append(b)
        if woken:
            self.call_later(now, self.wake_delay, self.woken, woken)

    def _push(self, now: float, counter: int) -> float:
        """Counter `counter` reached zero: the finishing block sweeps its waiters, a block-width of them
        per round (a pending-count atomic, then a warp's queue atomic), and keeps its slot meanwhile. A
        task it readies reaches the queue after its round and the pushing atomics. Returns the sweep's cycles."""
        rounds = self.queue.sweep(counter, self.threads)
        per_round = 2 * self.gpu.atomic_latency_cycles
        for r, ready in rounds.items():
            self.call_later(now, self.push_delay + r * per_round, self._pushed, ready)
        return self.queue.rounds(counter, self.threads) * per_round

    def _pushed(self, now: float, ready) -> None:
        self.queue.fifo.extend(ready)
        self.pump(now)

    # ----------------------------------------------------------------------
    def run(self) -> RawRun:
        first = self.kernels[0].preceding_launches * self.gpu.us_to_cycles(self.gpu.launch_overhead_us)
        self.call_later(0.0, first, self.launch, 0)
        self.env.run()
        if self.done_total < len(self.blocks):
            raise DeadlockError(deadlock_message(self))
        return RawRun(records=self.blocks.records(self.graph, self.gpu.clock_mhz),
                      block_dram_bytes=np.asarray(self.blocks.dram_bytes),
                      kernel_spans_cycles=[tuple(s) for s in self.spans],
                      l2_stats=self.l2.stats(np.asarray(self.blocks.order)),
                      total_cycles=self.spans[-1][1] + self.gpu.us_to_cycles(self.gpu.first_launch_us))


class _StretchedMachine(_Machine):
    """The machine under a `neighbour_stretch` law (`megasim.engine.laws.gemm_neighbour_stretch`): a block of a stretched type takes 1 + its factor x f
    as long, f the fraction of its jobs' time a GEMM block worked on its SM (`megasim.engine.neighbours`), or
    whether one works there as they end, for jobs that took no time. A subclass, so the default path pays
    nothing for it; compiled (`core.pxd`): as Python it halved the engine's speed on the calibrated profiles."""

    def __init__(self, graph, gpu, kernels, *args):
        _Machine.__init__(self, graph, gpu, kernels, *args)
        factors = gpu.model.law("neighbour_stretch").stretch_by_type()
        self.stretch = view(factors[np.asarray(self.op)])
        self.neighbours = GemmNeighbours(gpu.sm_count)
        self.busy_at_ready = memoryview(np.zeros(len(self.order)))

    def work(self, now: float, b: int) -> None:
        _Machine.work(self, now, b)
        if self.op[b] == _GEMM:
            self.neighbours.enter(now, self.sm[b])
        elif self.stretch[b]:
            self.busy_at_ready[b] = self.neighbours.busy_until(now, self.sm[b])

    def jobs_done(self, now: float, b: int) -> None:
        """`_Machine.jobs_done` with the stretch added to the wait (its lines repeated, not called: the base
        keeps them inline, the engine's hot path)."""
        if not self.stretch[b]:
            _Machine.jobs_done(self, now, b)
            return
        wait = self.t_ready[b] + self.floor[b] - now
        wait = (wait if wait > 0.0 else 0.0) + self.added[b]
        ran = now - self.t_ready[b]
        sm = self.sm[b]
        if ran > 0.0:
            beside = (self.neighbours.busy_until(now, sm) - self.busy_at_ready[b]) / ran
        else:
            beside = 1.0 if self.neighbours.working[sm] else 0.0
        wait += self.stretch[b] * beside * (ran + wait)
        if wait > 0:
            self.call_later(now, wait, self.finish, b)
        else:
            self.finish(now, b)

    def finish(self, now: float, b: int) -> None:
        if self.op[b] == _GEMM:
            self.neighbours.leave(now, self.sm[b])
        _Machine.finish(self, now, b)


DEFAULT_QUANTUM_CYCLES = 32.0


def run_kernels(graph: TaskGraph, kernels, gpu: GPUModel, policy: str = DEFAULT_POLICY,
                policy_options: dict | None = None, quantum: float = DEFAULT_QUANTUM_CYCLES, seed: int = 0) -> RawRun:
    """Execute `kernels` on `gpu`. `policy_options` are the policy's declared options (name -> value); `seed`
    draws the per-block work variation (if the model has it)."""
    stretch = gpu.model.law("neighbour_stretch")
    machine = _StretchedMachine if stretch is not None and stretch.stretch_by_type() is not None else _Machine
    return machine(graph, gpu, list(kernels), policy, policy_options, quantum, seed).run()
