"""L2 as a byte-capacity LRU over named buffer regions, by reuse distance.

Under LRU a re-read hits if fewer than `capacity` bytes of *other* data were
touched since the region's last access (its stack distance). We approximate
the stack distance by the bytes *brought into* L2 since then (misses and
writes): one global byte clock, one timestamp per region, O(1) per access.
Hits on hot data (the small U, read by every GEMM) do not push colder data
out, which is what LRU does with a hot set much smaller than the cache; the
approximation under-counts only when old resident data is re-touched in
between. Counting every byte instead made a few-hundred-kB U re-read by
thousands of GEMMs look like megabytes of traffic and evicted V that real
hardware keeps. `capacity` is the usable part of L2 (`l2_usable_fraction`),
which calibration fits.

A region can be partly resident (a halo row read before the band it belongs
to): each region keeps the bytes it holds, a re-read hits on those and
misses on the rest, and writes add to them.

Writes allocate in L2 and are charged to DRAM as write-back bytes: a dirty
line leaves eventually, and on every layer of interest V and M are far
larger than L2. Producer-consumer reuse (paper type (c)) therefore saves the
consumer's *read*, which is what the paper measures.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.regions import Buffer
from megasim.engine.blocks import column, view

NEVER = -1.0e30


class L2Model:
    """Per-region state in NumPy columns (8 bytes a region, read through memoryviews); the graph's access
    lists are read in place.

    The hot loop counts only misses, per buffer kind; reads and writes per kind are sums over the tasks
    that ran, taken once at the end (`stats`), so a hit costs no bookkeeping.
    """

    __slots__ = ("graph", "capacity", "clock", "last", "filled", "kind", "rptr", "rreg", "rbytes",
                 "wptr", "wreg", "wbytes", "miss_bytes")

    def __init__(self, graph, capacity_bytes: float):
        n = graph.regions.num_regions
        self.graph = graph
        self.capacity = capacity_bytes
        self.clock = 0.0
        self.last = column(np.full(n, NEVER), np.float64)
        self.filled = column(np.zeros(n), np.int64)
        self.kind = view(graph.regions.kind)
        self.rptr, self.rreg, self.rbytes = view(graph.read_ptr), view(graph.read_region), view(graph.read_bytes)
        self.wptr, self.wreg, self.wbytes = view(graph.write_ptr), view(graph.write_region), view(graph.write_bytes)
        self.miss_bytes = [0] * len(Buffer)

    def read(self, task: int) -> int:
        """Classify a task's reads; returns the bytes that miss (come from DRAM)."""
        last, filled, cap = self.last, self.filled, self.capacity
        rreg, rbytes, kind, miss_bytes = self.rreg, self.rbytes, self.kind, self.miss_bytes
        clock = self.clock
        miss = 0
        for i in range(self.rptr[task], self.rptr[task + 1]):
            r = rreg[i]
            b = rbytes[i]
            if clock - last[r] <= cap:
                have = filled[r]
                if b > have:
                    b -= have
                    miss_bytes[kind[r]] += b
                    miss += b
                    clock += b
                    filled[r] = have + b
            else:
                miss_bytes[kind[r]] += b
                miss += b
                clock += b
                filled[r] = b
            last[r] = clock
        self.clock = clock
        return miss

    def write(self, task: int) -> None:
        """Record a task's writes (they allocate in L2)."""
        last, filled, cap = self.last, self.filled, self.capacity
        wreg, wbytes = self.wreg, self.wbytes
        clock = self.clock
        for i in range(self.wptr[task], self.wptr[task + 1]):
            r = wreg[i]
            b = wbytes[i]
            filled[r] = filled[r] + b if clock - last[r] <= cap else b
            clock += b
            last[r] = clock
        self.clock = clock

    def stats(self, tasks: np.ndarray) -> dict:
        """Hit, miss and write bytes per buffer kind, once `tasks` have each read and written once."""
        g = self.graph
        reads = _bytes_by_kind(tasks, g.read_ptr, g.read_region, g.read_bytes, g.regions.kind)
        writes = _bytes_by_kind(tasks, g.write_ptr, g.write_region, g.write_bytes, g.regions.kind)
        return {k.name: {"hit_bytes": reads[k] - self.miss_bytes[k], "miss_bytes": self.miss_bytes[k],
                         "write_bytes": writes[k]} for k in Buffer}


def _bytes_by_kind(tasks, ptr, region, nbytes, kind, chunk: int = 1 << 12) -> list[int]:
    """Bytes of the accesses of `tasks` (CSR `ptr` into `region`, `nbytes`) per buffer kind, a chunk of
    tasks at a time so the index arrays stay small."""
    out = np.zeros(len(Buffer), dtype=np.int64)
    for lo in range(0, len(tasks), chunk):
        t = tasks[lo:lo + chunk]
        start, length = ptr[t], ptr[t + 1] - ptr[t]
        ends = np.cumsum(length)
        idx = np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - length - start, length)
        out += np.bincount(kind[region[idx]], weights=nbytes[idx], minlength=len(Buffer)).astype(np.int64)
    return out.tolist()


def hit_rate(stats: dict, kind: str | None = None) -> float:
    """Read hit rate by bytes, of one buffer kind or of all, from `L2Model.stats()`."""
    parts = [stats[kind]] if kind else list(stats.values())
    hit = sum(v["hit_bytes"] for v in parts)
    total = hit + sum(v["miss_bytes"] for v in parts)
    return hit / total if total else 0.0
