"""A ready-queue megakernel's state in the engine: its FIFO of ready tasks and the roots not yet let in."""
from __future__ import annotations

from collections import deque

from megasim.contract.scheduling import ReadyQueue


class QueueState:
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
