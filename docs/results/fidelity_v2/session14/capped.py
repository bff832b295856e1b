"""Study patch: an SM's FP32 issue shared by weight with a per-block cap (session 14, item 6).

`WeightedPSQueue` divides the SM's rate among its blocks by issue weight, so a transform's time grows with every
block beside it. Traced, a transform's few warps are latency-bound: alone it cannot use the whole SM, and blocks
beside it fill the issue slots it leaves before any of them slows (item 5's table). Here each block of task type t
gets min(cap_t, theta x w) of the SM's rate, theta set so the rates fill the SM (water-filling), cap_t = CAP[t] x the
SM's rate. A block whose FP32 work is done keeps its claim until it ends, as in the sticky queue. Pure Python, one
timer per SM, rates recomputed at every arrival, finish and release (a handful of blocks per SM).
"""
import numpy as np
import megasim.engine.blocks as blocks
import megasim.engine.core as core
from megasim.contract.problem import OP_NAMES, Op

_EPS = 1e-9
_COLS = {}


def _fill(capacity, claims):
    """Water-filling: {job: rate} for claims {job: (weight, cap)}."""
    rates, left, todo = {}, capacity, dict(claims)
    while todo:
        total = sum(w for w, _ in todo.values())
        theta = left / total
        capped = {j: c for j, (w, c) in todo.items() if c <= theta * w}
        if not capped:
            for j, (w, _) in todo.items():
                rates[j] = theta * w
            break
        for j, c in capped.items():
            rates[j] = c
            left -= c
            del todo[j]
    return rates


class CappedQueue:
    def __init__(self, clock, capacity, weight, pending, done, caps):
        self.call_later, self.half = clock.call_later, clock.quantum / 2
        self.capacity, self.weight, self.pending, self.done, self.caps = capacity, weight, pending, done, caps
        self.left, self.held, self.rates, self.t, self.token = {}, set(), {}, 0.0, 0

    def _advance(self, now):
        dt = now - self.t
        if dt > 0:
            for j in self.left:
                self.left[j] -= self.rates.get(j, 0.0) * dt
        self.t = now

    def _rerate(self, now):
        claims = {j: (self.weight[j], self.caps[j]) for j in (*self.left, *self.held)}
        self.rates = _fill(self.capacity, claims) if claims else {}
        self.token += 1
        if self.left:
            when = min(self.left[j] / self.rates[j] if self.rates[j] > 0 else np.inf for j in self.left)
            if np.isfinite(when):
                self.call_later(now, max(when, 0.0), self._fire, self.token)

    def submit(self, now, amount, job):
        self._advance(now)
        self.left[job] = amount
        self._rerate(now)

    def release(self, now, job=-1):
        self._advance(now)
        self.held.discard(job)
        self._rerate(now)

    def _fire(self, now, token):
        if token != self.token:
            return
        self._advance(now)
        finished = [j for j, s in self.left.items() if s <= self.rates[j] * self.half + _EPS * (1.0 + abs(s))]
        for j in finished:
            del self.left[j]
            self.held.add(j)
        self._rerate(now)
        for j in finished:
            left = self.pending[j] = self.pending[j] - 1
            if not left:
                self.done(now, j)


def install(cap: dict) -> None:
    """`cap`: {task type name: the fraction of the SM's FP32 rate one block of it can issue}; others uncapped."""
    original = blocks.BlockColumns._block_work

    def block_work(self, order, graph, gpu, scale):
        original(self, order, graph, gpu, scale)
        _COLS["op"] = np.asarray(self.op)
    blocks.BlockColumns._block_work = block_work
    fractions = np.array([cap.get(OP_NAMES[o], 1.0) for o in Op])

    def queue(clock, capacity, weight, pending, done):
        return CappedQueue(clock, capacity, weight, pending, done, fractions[_COLS["op"]] * capacity)
    core.WeightedPSQueue = queue
