"""A random topological order: the baseline any schedule should beat.

Kahn's algorithm over the counters, drawing the next task uniformly among the
ready ones with a seeded generator (one per call, never shared).
"""
from dataclasses import dataclass
import heapq

from megasim.contract.errors import MegasimError
from megasim.contract.mapping.strategies import strategy
from megasim.contract.options import option


@dataclass(frozen=True)
class RandomTopoOptions:
    seed: int = option(0, "seed of the random draw among ready tasks", search=(0, 1, 2, 3, 4, 5, 6, 7))

    def __post_init__(self):
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise MegasimError(f"random_topo mapping: seed must be an integer >= 0, got {self.seed!r}")


@strategy("random_topo", RandomTopoOptions)
def random_topo(graph, opts):
    import numpy as np

    from megasim.contract.graph import NO_COUNTER
    rng = np.random.default_rng(opts.seed)
    key = rng.random(graph.num_tasks).tolist()
    remaining = graph.counter_init.tolist()
    waits = graph.waits_on.tolist()
    signals = graph.signals.tolist()
    waiters: dict[int, list[int]] = {}
    blocked = [0] * graph.num_tasks
    ready = []
    for t, w in enumerate(waits):
        for c in w:
            if c != NO_COUNTER:
                waiters.setdefault(c, []).append(t)
                blocked[t] += 1
        if blocked[t] == 0:
            ready.append((key[t], t))
    heapq.heapify(ready)
    order = []
    while ready:
        _, t = heapq.heappop(ready)
        order.append(t)
        c = signals[t]
        if c == NO_COUNTER:
            continue
        remaining[c] -= 1
        if remaining[c] == 0:
            for child in waiters.get(c, ()):
                blocked[child] -= 1
                if blocked[child] == 0:
                    heapq.heappush(ready, (key[child], child))
    return order
