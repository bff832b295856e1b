"""The GPU model: kernels of thread blocks on SMs, in SimPy time (core cycles).

A kernel is a list of tasks in logical block order plus one block footprint.
Its blocks go out one at a time, in order, as slots free (`dispatcher`
hands each to the SM its policy picks, one per `tb_dispatch_interval_cycles`,
arriving `tb_dispatch_latency_cycles` later). A thread block then lives as
the megakernel's blocks do (paper Listing 2):

1. start (`task_overhead_cycles` after it lands: ticket, task-map read; a block of a non-fused kernel
   has neither and pays only `block_launch_cycles`):
   poll the counters it waits on. If one is not zero the block spins
   *holding its slot* until the last parent signals, and notices one atomic
   plus half a poll period later;
2. work: it classifies its reads against L2 and puts three jobs in flight at
   once: DRAM bytes (misses + write-backs) on the chip's DRAM queue, all its
   bytes on the L2 queue (its writes land in L2 when it ends), its FLOPs (over the op's efficiency) on its SM's
   FP32 queue. Memory and compute overlap; the block is done when all three
   are, and never sooner than one DRAM latency plus its bytes over what one
   block of its type can keep in flight (`block_bytes_per_cycle`); then it
   spends its type's fixed cycles and, with `serial_latency = "additive"`,
   its serial steps times their latency (`step_cycles`), which under "floor"
   are instead a minimum (`megasim.contract.work.block_latency_cycles`). Its FLOPs are the
   ones its code issues, padding included, and its DRAM bytes cost 1 over
   its type's `dram_access_efficiency` (`megasim.contract.work`). With
   `block_work_cv` > 0 each block's work is scaled by a seeded lognormal
   factor, so blocks of one type do not finish in lockstep;
3. end: decrement the counter it signals and free its slot.

Everything here is callbacks on SimPy events (through `Clock`, which lets
actions due within one quantum share an event), not one generator per
block: a VGG-scale graph has 40,000 blocks per launch sequence. If the event queue empties with
blocks unfinished, every resident block is spinning on parents that cannot
be dispatched: `DeadlockError` names them.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import simpy

from megasim.engine.dispatch import make_policy
from megasim.engine.clock import Clock
from megasim.engine.l2 import L2Model
from megasim.engine.psqueue import PSQueue
from megasim.contract.errors import DeadlockError
from megasim.contract.graph import NO_COUNTER, TaskGraph
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.resources import StageResources, blocks_per_sm
from megasim.contract.scheduling import ReadyQueue
from megasim.contract.spec import GPUSpec
from megasim.contract.records import empty_records
from megasim.contract.work import block_latency_cycles


@dataclass(frozen=True, eq=False)
class Kernel:
    """One launch: tasks in logical order, one block footprint, and whether blocks poll counters.

    `preceding_launches` tiny launches go first (the megakernel's counter reset), each one launch gap.
    A `persistent` kernel keeps its first wave of blocks resident: a later task starts in the slot its
    predecessor freed without a block launch (`megasim.contract.scheduling`). A kernel with a `ready`
    queue is persistent too, but hands a slot only a task whose parents are done, in queue order.
    """

    tasks: np.ndarray
    resources: StageResources
    check_deps: bool
    name: str = "kernel"
    preceding_launches: int = 0
    persistent: bool = False
    ready: ReadyQueue | None = None


@dataclass(frozen=True, eq=False)
class RawRun:
    records: np.ndarray
    block_dram_bytes: np.ndarray
    kernel_spans_cycles: list
    l2_stats: dict
    total_cycles: float


class _Machine:
    def __init__(self, graph: TaskGraph, gpu: GPUSpec, kernels, policy: str, policy_options: dict | None,
                 quantum: float, seed: int):
        self.env = env = simpy.Environment()
        self.clock = Clock(env, quantum)
        self.gpu, self.graph, self.kernels = gpu, graph, kernels
        self.policy_name, self.policy_options = policy, policy_options
        self.l2 = L2Model(graph, gpu.l2_bytes * gpu.l2_usable_fraction)
        self.op = graph.op.tolist()
        self.waits = graph.waits_on.tolist()
        self.signals = graph.signals.tolist()
        self.flops = (graph.issued_flops if gpu.issued_flops and graph.issued_flops is not None else graph.flops).tolist()
        path, added = block_latency_cycles(graph, gpu)
        self.path, self.added = path.tolist(), added.tolist()
        self.written = graph.bytes_per_task()[1].tolist()
        self.eff = [gpu.efficiency(op, graph.layer.c) for op in Op]
        self.remaining = graph.counter_init.tolist()
        self.waiters: dict[int, list[int]] = {}
        self.wake_delay = gpu.atomic_latency_cycles + gpu.spin_poll_cycles / 2
        self.push_delay = gpu.atomic_latency_cycles + gpu.spin_poll_cycles / 2
        self.overhead = gpu.task_overhead_cycles
        self.latency_floor = gpu.dram_latency_cycles
        self.block_bw = [gpu.block_bytes_per_cycle.get(OP_NAMES[op], 0.0) for op in Op]
        self.dram_cost = [1.0 / gpu.dram_access_efficiency.get(OP_NAMES[op], 1.0) for op in Op]
        total = sum(len(k.tasks) for k in kernels)
        self.order = np.concatenate([k.tasks for k in kernels]).tolist()
        self.sm = [-1] * total
        self.t_dispatch = [0.0] * total
        self.t_start = [0.0] * total
        self.t_ready = [0.0] * total
        self.t_end = [-1.0] * total
        self.blocked = [0] * total
        self.work_scale = _work_scale(total, gpu.block_work_cv, seed)
        self.floor = [0.0] * total
        self.pending = [0] * total
        self.dram_bytes = [0] * total
        self.spans = []
        self.kernel_index = -1
        self.done_total = 0

    # dispatcher -------------------------------------------------------
    def launch(self, k: int) -> None:
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
        self.queue = kern.ready and _QueueState(kern.ready, self.base, self.launched_blocks)
        self.threads = kern.resources.threads
        co_resident = min(slots, -(-len(kern.tasks) // gpu.sm_count))
        mem_cap = gpu.sm_bytes_per_cycle / co_resident
        self.dram = PSQueue(self.clock, gpu.dram_bytes_per_cycle, mem_cap)
        self.l2q = PSQueue(self.clock, gpu.l2_bytes_per_cycle, mem_cap)
        fp_cap = 2.0 * kern.resources.threads
        self.fp = [PSQueue(self.clock, gpu.fp32_flops_per_cycle_per_sm, fp_cap) for _ in range(gpu.sm_count)]
        self.next_dispatch_at = self.env.now
        self.spans.append([self.env.now, None])
        self.pump()

    def pump(self) -> None:
        """Hand out blocks in logical order while the policy finds free slots."""
        env, now = self.env, self.env.now
        t = max(now, self.next_dispatch_at)
        interval = self.gpu.tb_dispatch_interval_cycles
        overhead = self.overhead if self.check else self.gpu.block_launch_cycles
        latency = self.gpu.tb_dispatch_latency_cycles + overhead
        looped = max(0.0, self.overhead - self.gpu.block_launch_cycles)
        queue = self.queue
        while self.next < self.size and (not queue or queue.fifo):
            sm = self.policy.take(self.next)
            if sm < 0:
                break
            b = queue.fifo.popleft() if queue else self.base + self.next
            new_block = self.next < self.launched_blocks
            self.next += 1
            self.sm[b] = sm
            self.t_dispatch[b] = t if new_block else now
            self.clock.call_later(self.t_dispatch[b] - now + (latency if new_block else looped), self.start, b)
            if new_block:
                t += interval
        self.next_dispatch_at = t

    # a thread block's life ---------------------------------------------
    def start(self, b: int) -> None:
        """The block has taken its ticket and read its task: poll its counters."""
        now = self.env.now
        self.t_start[b] = now
        if self.check and not self.queue:
            task = self.order[b]
            pend = 0
            for c in self.waits[task]:
                if c != NO_COUNTER and self.remaining[c] > 0:
                    self.waiters.setdefault(c, []).append(b)
                    pend += 1
            if pend:
                self.blocked[b] = pend
                return
        self.work(b, now)

    def woken(self, blocks) -> None:
        now = self.env.now
        for b in blocks:
            self.work(b, now)

    def work(self, b: int, now: float) -> None:
        """Dependencies met: classify reads, then DRAM, L2 and FP32 jobs run at once."""
        self.t_ready[b] = now
        task = self.order[b]
        miss, l2_read = self.l2.read(task)
        written = self.written[task]
        dram = miss + written
        self.dram_bytes[b] = dram
        scale = self.work_scale[b]
        moved = (l2_read + written) * scale
        op = self.op[task]
        self.floor[b] = max(self.latency_floor + (moved / self.block_bw[op] if self.block_bw[op] else 0.0),
                            self.path[task] * scale)
        done = self._done_callback(b)
        self.pending[b] = 3 if dram else 2
        if dram:
            self.dram.submit(dram * scale * self.dram_cost[op], done)
        self.l2q.submit(moved, done)
        self.fp[self.sm[b]].submit(self.flops[task] * scale / self.eff[op], done)

    def _done_callback(self, b):
        def done():
            self.pending[b] -= 1
            if self.pending[b] == 0:
                wait = max(self.t_ready[b] + self.floor[b] - self.env.now, 0.0) + self.added[self.order[b]] * self.work_scale[b]
                if wait > 0:
                    self.clock.call_later(wait, self.finish, b)
                else:
                    self.finish(b)
        return done

    def finish(self, b: int) -> None:
        now = self.env.now
        self.t_end[b] = now
        self.l2.write(self.order[b])
        self.done_total += 1
        self.done_in_kernel += 1
        hold = 0.0
        if self.check:
            c = self.signals[self.order[b]]
            if c != NO_COUNTER:
                self.remaining[c] -= 1
                if self.remaining[c] == 0:
                    if self.queue:
                        hold = self._push(c)
                    else:
                        self._wake(self.waiters.pop(c, ()))
            if self.queue:
                root = self.queue.next_root_after(b)
                if root:
                    self.clock.call_later(hold + self.push_delay, self._pushed, root)
        if self.done_in_kernel == self.size:
            self.policy.release(self.sm[b])
            self.spans[-1][1] = now
            if self.kernel_index + 1 < len(self.kernels):
                gap = self.gpu.us_to_cycles(self.gpu.launch_overhead_us)
                self.clock.call_later(gap, self.launch, self.kernel_index + 1)
        elif hold:
            self.clock.call_later(hold, self._release, b)
        else:
            self._release(b)

    def _release(self, b: int) -> None:
        self.policy.release(self.sm[b])
        self.pump()

    def _wake(self, waiting) -> None:
        woken = []
        for b in waiting:
            self.blocked[b] -= 1
            if self.blocked[b] == 0:
                woken.append(b)
        if woken:
            self.clock.call_later(self.wake_delay, self.woken, woken)

    def _push(self, counter: int) -> float:
        """Counter `counter` reached zero: the finishing block sweeps its waiters, a block-width of them
        per round (a pending-count atomic, then a warp's queue atomic), and keeps its slot meanwhile. A
        task it readies reaches the queue after its round and the pushing atomics. Returns the sweep's cycles."""
        rounds = self.queue.sweep(counter, self.threads)
        per_round = 2 * self.gpu.atomic_latency_cycles
        for r, ready in rounds.items():
            self.clock.call_later(self.push_delay + r * per_round, self._pushed, ready)
        return self.queue.rounds(counter, self.threads) * per_round

    def _pushed(self, ready) -> None:
        self.queue.fifo.extend(ready)
        self.pump()

    # ----------------------------------------------------------------------
    def run(self) -> RawRun:
        first = self.kernels[0].preceding_launches * self.gpu.us_to_cycles(self.gpu.launch_overhead_us)
        self.clock.call_later(first, self.launch, 0)
        self.env.run()
        if self.done_total < len(self.order):
            raise DeadlockError(self._deadlock_message())
        return self._collect()

    def _collect(self) -> RawRun:
        n = len(self.order)
        rec = empty_records(n)
        to_us = 1.0 / self.gpu.clock_mhz
        rec["block"] = np.arange(n)
        rec["task"] = self.order
        rec["op"] = self.graph.op[rec["task"]]
        rec["sm"] = self.sm
        rec["dispatch_us"] = np.array(self.t_dispatch) * to_us
        rec["start_us"] = np.array(self.t_start) * to_us
        rec["ready_us"] = np.array(self.t_ready) * to_us
        rec["end_us"] = np.array(self.t_end) * to_us
        return RawRun(records=rec, block_dram_bytes=np.array(self.dram_bytes, dtype=np.float64),
                      kernel_spans_cycles=[tuple(s) for s in self.spans],
                      l2_stats=self.l2.stats(),
                      total_cycles=self.spans[-1][1] + self.gpu.us_to_cycles(self.gpu.first_launch_us))

    def _deadlock_message(self) -> str:
        if self.queue:
            never = [b for b in range(len(self.order)) if self.sm[b] < 0]
            return (f"ready queue ran dry at {self.gpu.cycles_to_us(self.env.now):.1f} us: {len(never)} tasks never "
                    f"became ready (first blocks {never[:5]}); a counter they wait on never reaches zero")
        pos = {task: b for b, task in enumerate(self.order)}
        spinning = [b for b in range(len(self.order)) if self.blocked[b] > 0]
        parts = []
        for b in spinning[:3]:
            task = self.order[b]
            for c in self.waits[task]:
                if c != NO_COUNTER and self.remaining[c] > 0:
                    parents = [pos[p] for p in self.graph.parents_of_counter(c).tolist() if self.t_end[pos[p]] < 0]
                    undispatched = [p for p in parents if self.sm[p] < 0]
                    parts.append(f"block {b} (task {task}, {OP_NAMES[Op(self.op[task])]}) waits on counter {c} "
                                 f"for parent blocks {parents[:5]}{'...' if len(parents) > 5 else ''}"
                                 f" ({len(undispatched)} never dispatched)")
        more = f"; {len(spinning) - 3} more spinning" if len(spinning) > 3 else ""
        return (f"deadlock at {self.gpu.cycles_to_us(self.env.now):.1f} us: {len(spinning)} resident blocks spin "
                f"on parents that cannot be dispatched: " + "; ".join(parts) + more)


class _QueueState:
    """A ready-queue kernel's FIFO, in global block numbers, its pending counts, and its root window: the
    first `window` roots are queued at launch, the next one each time a root finishes
    (`megasim.contract.scheduling`)."""

    def __init__(self, ready: ReadyQueue, base: int, window: int):
        self.ready, self.base = ready, base
        self.roots = (ready.roots + base).tolist()
        self.fifo = deque(self.roots[:window])
        self.next_root = min(window, len(self.roots))
        self.pending = ready.pending.tolist()

    def next_root_after(self, b: int) -> list:
        """Block `b` finished: the root it lets into the FIFO, if it was a root and any are left."""
        if self.ready.pending[b - self.base] or self.next_root >= len(self.roots):
            return []
        self.next_root += 1
        return [self.roots[self.next_root - 1]]

    def sweep(self, counter: int, threads: int) -> dict[int, list]:
        """The waiters `counter` makes ready, by the sweep round that pushes them."""
        index = {w: i for i, w in enumerate(self.ready.waiters_of(counter).tolist())}
        out: dict[int, list] = {}
        for w in self.ready.zeroed(self.pending, counter):
            out.setdefault(index[w] // threads, []).append(self.base + w)
        return out

    def rounds(self, counter: int, threads: int) -> int:
        n = int(self.ready.waiter_offsets[counter + 1] - self.ready.waiter_offsets[counter])
        return -(-n // threads)


DEFAULT_QUANTUM_CYCLES = 32.0


def _work_scale(n: int, cv: float, seed: int) -> list:
    """Per-block work factors, lognormal with mean 1 and the given coefficient of variation."""
    if not cv:
        return [1.0] * n
    sigma = np.sqrt(np.log1p(cv * cv))
    return np.random.default_rng(seed).lognormal(-sigma * sigma / 2, sigma, n).tolist()


def run_kernels(graph: TaskGraph, kernels, gpu: GPUSpec, policy: str = "in_order_round_robin",
                policy_options: dict | None = None, quantum: float = DEFAULT_QUANTUM_CYCLES, seed: int = 0) -> RawRun:
    """Execute `kernels` on `gpu`. `policy_options` are the policy's declared options (name -> value);
    `seed` draws the per-block work variation (if the spec has any)."""
    return _Machine(graph, gpu, list(kernels), policy, policy_options, quantum, seed).run()
