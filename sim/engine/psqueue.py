"""A shared-bandwidth resource as an egalitarian processor-sharing queue.

Think of a DRAM channel as a pipe every active thread block drinks from at
once: with n blocks moving bytes, each gets capacity/n, but no more than its
own cap (a block has only so many loads in flight). All jobs then progress at
the same rate, so one *virtual clock* V, the work each job has received since
the start, describes them all: a job of size s arriving when V = v finishes
when V reaches v + s. Completion order is fixed at arrival (a heap keyed on
v + s, then arrival order: first come, first served on a tie) and an arrival
or departure only changes how fast V runs. Per event the cost is O(log n); no active transfer is ever
re-rated.

A job is an int (the engine's block number) and the heap holds plain
(finish, arrival, job) tuples. The owner keeps each block's count of
unfinished jobs in one column (`pending`, shared by all its queues); a timer
that pops jobs counts them down there and calls `done(now, job)` only for a
block whose last job it was: no closure per job, and no call for a job that
leaves others running. Only the head of the heap has a timer. When an
arrival slows V the timer is early; it fires, finds nothing done, and
re-arms: lazy, never wrong, and one timer per queue rather than one per job.
A timer re-arms before it reports, so the actions it schedules keep their
order in their instants.

A *sticky* queue (an SM's FP32 issue under the law `resident_sharing`) keeps a
job's block among those sharing it after its work is done, until the owner
calls `release` when the block ends: its latency (the steps it waits on
loads) is spent while still holding a share of the SM's issue, as per-block
traces show, so a block's work grows with all the blocks working beside it.
"""
from __future__ import annotations

from heapq import heappop, heappush
from math import inf

_EPS = 1e-9
EPS = _EPS  # what other modules import (where this module is compiled, _EPS is a C constant)


class PSQueue:
    __slots__ = ("call_later", "capacity", "job_cap", "v", "t", "r", "heap", "seq", "armed_at", "token", "done",
                 "pending", "half", "fire", "sticky", "held")

    def __init__(self, clock, capacity: float, job_cap: float, pending, done, sticky: bool = False):
        """`pending[job]` counts the owner's unfinished jobs of `job`; `done(now, job)` is called when a
        timer finishes the last one, jobs that finish together in completion order."""
        self.call_later = clock.call_later
        self.capacity = capacity
        self.job_cap = min(job_cap, capacity)
        self.v = 0.0
        self.t = 0.0
        self.r = 0.0
        self.heap: list = []
        self.seq = 0
        self.armed_at = inf
        self.token = 0
        self.done = done
        self.pending = pending
        self.half = clock.quantum / 2
        self.fire = self._fire
        self.sticky = sticky
        self.held = 0

    def submit(self, now: float, amount: float, job: int) -> None:
        """Start `job` with `amount` units of work at time `now`."""
        v = self.v = self.v + (now - self.t) * self.r
        self.t = now
        heap = self.heap
        seq = self.seq = self.seq + 1
        heappush(heap, (v + amount, seq, job))
        share = self.capacity / (len(heap) + self.held)
        cap = self.job_cap
        r = self.r = share if share < cap else cap
        head = heap[0]
        if head[2] == job or self.armed_at == inf:
            when = now + (head[0] - v) / r
            if when < self.armed_at - _EPS:
                self.armed_at = when
                token = self.token = self.token + 1
                self.call_later(now, when - now, self.fire, token)

    def _fire(self, now: float, token: int) -> None:
        if token == self.token:
            self.armed_at = inf
        v = self.v = self.v + (now - self.t) * self.r
        self.t = now
        heap = self.heap
        if not heap:
            return
        r = self.r
        limit = v + r * self.half + _EPS * (1.0 + v)
        job = finished = None
        if heap[0][0] <= limit:
            job = heappop(heap)[2]
            while heap and heap[0][0] <= limit:
                if finished is None:
                    finished = [job]
                finished.append(heappop(heap)[2])
            if self.sticky:
                self.held += 1 + (len(finished) - 1 if finished else 0)
            share = self.capacity / (len(heap) + self.held) if heap else 0.0
            cap = self.job_cap
            r = self.r = share if share < cap else cap
            self.armed_at = inf
        if heap:
            when = now + (heap[0][0] - v) / r
            if when < self.armed_at - _EPS:
                self.armed_at = when
                token = self.token = self.token + 1
                self.call_later(now, when - now, self.fire, token)
        if job is None:
            return
        pending = self.pending
        for job in finished or (job,):
            left = pending[job] = pending[job] - 1
            if not left:
                self.done(now, job)

    def release(self, now: float, job: int = -1) -> None:
        """A sticky queue's block whose job had finished has ended: one fewer shares the capacity."""
        self.v += (now - self.t) * self.r
        self.t = now
        self.held -= 1
        if self.heap:
            share = self.capacity / (len(self.heap) + self.held)
            self.r = share if share < self.job_cap else self.job_cap
            self._arm(now)

    def _arm(self, now: float) -> None:
        """Arm the timer for the head's finish if that is sooner than the one armed (`submit` and `_fire` do
        the same inline: they are the engine's hottest path)."""
        when = now + (self.heap[0][0] - self.v) / self.r
        if when < self.armed_at - _EPS:
            self.armed_at = when
            token = self.token = self.token + 1
            self.call_later(now, when - now, self.fire, token)
