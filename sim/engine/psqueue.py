"""A shared-bandwidth resource as an egalitarian processor-sharing queue.

Think of a DRAM channel as a pipe every active thread block drinks from at
once: with n blocks moving bytes, each gets capacity/n, but no more than its
own cap (a block has only so many loads in flight). All jobs then progress at
the same rate, so one *virtual clock* V, the work each job has received since
the start, describes them all: a job of size s arriving when V = v finishes
when V reaches v + s. Completion order is fixed at arrival (a heap keyed on
v + s) and an arrival or departure only changes how fast V runs. Per event
the cost is O(log n); no active transfer is ever re-rated.

Only the head of the heap has a timer. When an arrival slows V the timer is
early; it fires, finds nothing done, and re-arms: lazy, never wrong.
"""
from __future__ import annotations

import heapq
from math import inf

_EPS = 1e-9


class PSQueue:
    __slots__ = ("env", "clock", "capacity", "job_cap", "v", "t", "r", "heap", "seq", "armed_at", "token")

    def __init__(self, clock, capacity: float, job_cap: float):
        self.env = clock.env
        self.clock = clock
        self.capacity = capacity
        self.job_cap = min(job_cap, capacity)
        self.v = 0.0
        self.t = 0.0
        self.r = 0.0
        self.heap: list = []
        self.seq = 0
        self.armed_at = inf
        self.token = 0

    def _set_rate(self) -> None:
        n = len(self.heap)
        share = self.capacity / n if n else 0.0
        self.r = share if share < self.job_cap else self.job_cap

    def submit(self, amount: float, done) -> None:
        """Start a job of `amount` units; `done()` is called when it has received them."""
        now = self.env.now
        self.v += (now - self.t) * self.r
        self.t = now
        self.seq += 1
        heap = self.heap
        heapq.heappush(heap, (self.v + amount, self.seq, done))
        self._set_rate()
        if heap[0][2] is done or self.armed_at == inf:
            self._arm(now)

    def _arm(self, now: float) -> None:
        when = now + (self.heap[0][0] - self.v) / self.r
        if when < self.armed_at - _EPS:
            self.armed_at = when
            self.token += 1
            self.clock.call_later(when - now, self._fire, self.token)

    def _fire(self, token: int) -> None:
        now = self.env.now
        if token == self.token:
            self.armed_at = inf
        self.v += (now - self.t) * self.r
        self.t = now
        heap = self.heap
        limit = self.v + self.r * self.clock.quantum / 2 + _EPS * (1.0 + self.v)
        if not heap or heap[0][0] > limit:
            if heap:
                self._arm(now)
            return
        finished = []
        while heap and heap[0][0] <= limit:
            finished.append(heapq.heappop(heap)[2])
        self._set_rate()
        self.armed_at = inf
        if heap:
            self._arm(now)
        for done in finished:
            done()
