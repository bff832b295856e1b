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
    __slots__ = ("env", "capacity", "job_cap", "v", "t", "heap", "seq", "armed_at", "token")

    def __init__(self, env, capacity: float, job_cap: float):
        self.env = env
        self.capacity = capacity
        self.job_cap = min(job_cap, capacity)
        self.v = 0.0
        self.t = 0.0
        self.heap: list = []
        self.seq = 0
        self.armed_at = inf
        self.token = 0

    def rate(self) -> float:
        n = len(self.heap)
        if not n:
            return 0.0
        share = self.capacity / n
        return share if share < self.job_cap else self.job_cap

    def submit(self, amount: float, done) -> None:
        """Start a job of `amount` units; `done()` is called when it has received them."""
        now = self.env.now
        heap = self.heap
        if heap:
            self.v += (now - self.t) * self.rate()
        self.t = now
        self.seq += 1
        finish = self.v + amount
        heapq.heappush(heap, (finish, self.seq, done))
        if heap[0][2] is done:
            self._arm(now)
        elif self.armed_at == inf:
            self._arm(now)

    def _arm(self, now: float) -> None:
        when = now + (self.heap[0][0] - self.v) / self.rate()
        if when < self.armed_at - _EPS:
            self.armed_at = when
            self.token += 1
            self.env.timeout(when - now, self.token).callbacks.append(self._fire)

    def _fire(self, ev) -> None:
        now = self.env.now
        if ev._value == self.token:
            self.armed_at = inf
        heap = self.heap
        if heap:
            self.v += (now - self.t) * self.rate()
        self.t = now
        limit = self.v + _EPS * (1.0 + self.v)
        finished = []
        while heap and heap[0][0] <= limit:
            finished.append(heapq.heappop(heap)[2])
        if finished:
            self.armed_at = inf
        if heap:
            self._arm(now)
        for done in finished:
            done()
