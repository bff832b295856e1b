"""Prototype: an SM's FP32 issue shared by weight x gamma^(age rank), held until release."""
from math import inf
GAMMA = [1.0]
HELD = [1.0]
ACTIVE_RANK = [False]

class AgedPSQueue:
    def __init__(self, clock, capacity, weight, pending, done):
        self.call_later = clock.call_later; self.capacity = capacity; self.weight = weight
        self.pending = pending; self.done = done; self.half = clock.quantum / 2
        self.entries = []   # [job, remaining or None when done], age order
        self.t = 0.0; self.token = 0; self.rates = []

    def _advance(self, now):
        dt = now - self.t
        if dt > 0:
            for e, r in zip(self.entries, self.rates):
                if e[1] is not None:
                    e[1] -= r * dt
        self.t = now

    def _rerate(self, now):
        g = GAMMA[0]; ws = []; x = 1.0
        for e in self.entries:
            if e[1] is None:
                ws.append(self.weight[e[0]] * HELD[0] * (1.0 if ACTIVE_RANK[0] else x))
                if not ACTIVE_RANK[0]: x *= g
            else:
                ws.append(self.weight[e[0]] * x); x *= g
        tot = sum(ws)
        self.rates = [self.capacity * w / tot if e[1] is not None else 0.0 for e, w in zip(self.entries, ws)]
        best = inf
        for e, r in zip(self.entries, self.rates):
            if e[1] is not None and r > 0:
                best = min(best, max(e[1], 0.0) / r)
        self.token += 1
        if best < inf:
            self.call_later(now, best, self._fire, self.token)

    def submit(self, now, amount, job):
        self._advance(now)
        self.entries.append([job, amount])
        self._rerate(now)

    def release(self, now, job=-1):
        self._advance(now)
        self.entries = [e for e in self.entries if e[0] != job]
        self._rerate(now)

    def _fire(self, now, token):
        if token != self.token:
            return
        self._advance(now)
        fin = []
        for e, r in zip(self.entries, self.rates):
            if e[1] is not None and e[1] <= r * self.half + 1e-9 * (1 + abs(e[1])):
                e[1] = None; fin.append(e[0])
        self._rerate(now)
        for job in fin:
            left = self.pending[job] = self.pending[job] - 1
            if not left:
                self.done(now, job)

def install(gamma, held=1.0, active_rank=False):
    HELD[0]=held; ACTIVE_RANK[0]=active_rank
    import megasim.engine.core as core
    GAMMA[0] = gamma
    core.WeightedPSQueue = AgedPSQueue
