"""An SM's FP32 issue shared in proportion to each block's issue weight, held until the block ends.

`PSQueue` shares a resource equally. Per-block traces show an SM's issue is not shared equally between task
types: a GEMM block barely slows beside a transform, while an input transform beside working GEMMs takes up
to twice its time alone (docs/decisions.md,
"A GEMM weighs 2 in an SM's issue"). A warp scheduler picks among ready warps,
and a GEMM's warps, with their long runs of independent FFMAs, are ready far more often than a transform's,
which wait on loads. So each block gets capacity x w / W, w its task type's `issue_weight` (the law `resident_sharing`) and W the
weights of every block working on the SM: discriminatory processor sharing. As in a sticky `PSQueue`
(resident sharing, which this queue implies) a block keeps its weight in W until it ends, not only
while its FP32 work runs.

One virtual clock still serves all jobs: V runs at capacity / W per unit of weight, and a job of `amount`
and weight w that arrives at V = v finishes when V reaches v + amount / w. Completions keep their order at
arrival; arrivals and releases change only the clock's speed. The per-block rate cap of `PSQueue` is not
applied: with W at least the job's own weight a block never exceeds the SM's rate, which the cap of a block
of 128 threads or more equals.
"""
from __future__ import annotations

from heapq import heappop, heappush
from math import inf

from megasim.engine.psqueue import EPS as _EPS, PSQueue


class WeightedPSQueue(PSQueue):
    """`PSQueue`'s virtual clock and timer (its fields and `fire`), with weighted shares held until release."""

    __slots__ = ("weight", "total")

    def __init__(self, clock, capacity: float, weight, pending, done):
        """`weight[job]` is each job's issue weight; `pending` and `done` as in `PSQueue`."""
        super().__init__(clock, capacity, capacity, pending, done, sticky=True)
        self.weight = weight
        self.total = 0.0

    def _rerate(self, now: float) -> None:
        self.r = self.capacity / self.total if self.total > 0 else 0.0
        if self.heap:
            self._arm(now)

    def submit(self, now: float, amount: float, job: int) -> None:
        """`job` starts `amount` of work at `now`; its weight joins the SM's total until `release`."""
        v = self.v = self.v + (now - self.t) * self.r
        self.t = now
        w = self.weight[job]
        self.seq += 1
        heappush(self.heap, (v + amount / w, self.seq, job))
        self.total += w
        self._rerate(now)

    def release(self, now: float, job: int = -1) -> None:
        """`job`'s block has ended: its weight leaves the total."""
        self.v += (now - self.t) * self.r
        self.t = now
        self.total -= self.weight[job]
        if self.total < _EPS:
            self.total = 0.0
        self._rerate(now)

    def _fire(self, now: float, token: int) -> None:
        """`PSQueue._fire` less its re-rating: a finished job's weight stays until `release`."""
        if token == self.token:
            self.armed_at = inf
        v = self.v = self.v + (now - self.t) * self.r
        self.t = now
        heap = self.heap
        if not heap:
            return
        limit = v + self.r * self.half + _EPS * (1.0 + v)
        finished = []
        while heap and heap[0][0] <= limit:
            finished.append(heappop(heap)[2])
        if finished:
            self.armed_at = inf
        if heap:
            self._arm(now)
        pending = self.pending
        for job in finished:
            left = pending[job] = pending[job] - 1
            if not left:
                self.done(now, job)
