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

A job is an int (the engine's block number), so the heap holds plain
(finish, arrival, job) tuples and finished jobs go back to the owner in one call per
timer, as a list: no closure per job. Only the head of the heap has a timer.
When an arrival slows V the timer is early; it fires, finds nothing done,
and re-arms: lazy, never wrong, and one timer per queue rather than one per
job.
"""
from __future__ import annotations

from heapq import heappop, heappush
from math import inf

_EPS = 1e-9


class PSQueue:
    __slots__ = ("call_later", "capacity", "job_cap", "v", "t", "r", "heap", "seq", "armed_at", "token", "done",
                 "half", "fire")

    def __init__(self, clock, capacity: float, job_cap: float, done):
        """`done(jobs)` is called with the list of jobs that finish together, in completion order."""
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
        self.half = clock.quantum / 2
        self.fire = self._fire

    def submit(self, now: float, amount: float, job: int) -> None:
        """Start `job` with `amount` units of work at time `now`."""
        v = self.v = self.v + (now - self.t) * self.r
        self.t = now
        heap = self.heap
        self.seq += 1
        heappush(heap, (v + amount, self.seq, job))
        share = self.capacity / len(heap)
        r = self.r = share if share < self.job_cap else self.job_cap
        if heap[0][2] == job or self.armed_at == inf:
            when = now + (heap[0][0] - v) / r
            if when < self.armed_at - _EPS:
                self.armed_at = when
                self.token += 1
                self.call_later(now, when - now, self.fire, self.token)

    def _fire(self, now: float, token: int) -> None:
        if token == self.token:
            self.armed_at = inf
        v = self.v = self.v + (now - self.t) * self.r
        self.t = now
        heap = self.heap
        r = self.r
        limit = v + r * self.half + _EPS * (1.0 + v)
        finished = None
        if heap and heap[0][0] <= limit:
            finished = [heappop(heap)[2]]
            while heap and heap[0][0] <= limit:
                finished.append(heappop(heap)[2])
            n = len(heap)
            share = self.capacity / n if n else 0.0
            r = self.r = share if share < self.job_cap else self.job_cap
            self.armed_at = inf
        if heap:
            when = now + (heap[0][0] - v) / r
            if when < self.armed_at - _EPS:
                self.armed_at = when
                self.token += 1
                self.call_later(now, when - now, self.fire, self.token)
        if finished:
            self.done(now, finished)
