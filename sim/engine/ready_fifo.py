"""A ready-queue megakernel's state in the engine: its FIFO of ready tasks and the roots not yet let in."""
from __future__ import annotations

from collections import deque

from megasim.contract.scheduling import ReadyQueue, RootWindow


class QueueState:
    """A ready-queue kernel's FIFO, in global block numbers, its pending counts, and its root window
    (`megasim.contract.scheduling.RootWindow`)."""

    def __init__(self, ready: ReadyQueue, base: int, window: int):
        self.ready, self.base = ready, base
        self.roots = RootWindow((ready.roots + base).tolist(), window)
        self.fifo = deque(self.roots.first())
        self.pending = ready.pending.tolist()

    def next_root_after(self, b: int) -> list:
        """Block `b` finished: the root it lets into the FIFO, if it was a root and any are left."""
        return [] if self.ready.pending[b - self.base] else self.roots.after_root()

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
