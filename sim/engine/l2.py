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

from megasim.contract.regions import Buffer

NEVER = -1.0e30


class L2Model:
    __slots__ = ("capacity", "clock", "last", "filled", "kind", "rptr", "rreg", "rbytes",
                 "wptr", "wreg", "wbytes", "hit_bytes", "miss_bytes", "write_bytes")

    def __init__(self, graph, capacity_bytes: float):
        self.capacity = capacity_bytes
        self.clock = 0.0
        self.last = [NEVER] * graph.regions.num_regions
        self.filled = [0] * graph.regions.num_regions
        self.kind = graph.regions.kind.tolist()
        self.rptr, self.rreg, self.rbytes = (graph.read_ptr.tolist(), graph.read_region.tolist(),
                                             graph.read_bytes.tolist())
        self.wptr, self.wreg, self.wbytes = (graph.write_ptr.tolist(), graph.write_region.tolist(),
                                             graph.write_bytes.tolist())
        self.hit_bytes = [0] * len(Buffer)
        self.miss_bytes = [0] * len(Buffer)
        self.write_bytes = [0] * len(Buffer)

    def read(self, task: int) -> tuple[int, int]:
        """Classify a task's reads; returns (DRAM bytes, L2 bytes)."""
        last, filled, kind, cap = self.last, self.filled, self.kind, self.capacity
        rreg, rbytes = self.rreg, self.rbytes
        clock = self.clock
        miss = total = 0
        for i in range(self.rptr[task], self.rptr[task + 1]):
            r, b = rreg[i], rbytes[i]
            if clock - last[r] <= cap:
                have = filled[r]
                if b <= have:
                    self.hit_bytes[kind[r]] += b
                else:
                    self.hit_bytes[kind[r]] += have
                    self.miss_bytes[kind[r]] += b - have
                    miss += b - have
                    clock += b - have
                    filled[r] = b
            else:
                self.miss_bytes[kind[r]] += b
                miss += b
                clock += b
                filled[r] = b
            last[r] = clock
            total += b
        self.clock = clock
        return miss, total

    def write(self, task: int) -> int:
        """Record a task's writes; returns the bytes that will go back to DRAM."""
        last, filled, kind, cap = self.last, self.filled, self.kind, self.capacity
        wreg, wbytes = self.wreg, self.wbytes
        clock = self.clock
        total = 0
        for i in range(self.wptr[task], self.wptr[task + 1]):
            r, b = wreg[i], wbytes[i]
            filled[r] = filled[r] + b if clock - last[r] <= cap else b
            clock += b
            last[r] = clock
            total += b
            self.write_bytes[kind[r]] += b
        self.clock = clock
        return total

    def stats(self) -> dict:
        return {k.name: {"hit_bytes": self.hit_bytes[k], "miss_bytes": self.miss_bytes[k],
                         "write_bytes": self.write_bytes[k]} for k in Buffer}


def hit_rate(stats: dict, kind: str | None = None) -> float:
    """Read hit rate by bytes, of one buffer kind or of all, from `L2Model.stats()`."""
    parts = [stats[kind]] if kind else list(stats.values())
    hit = sum(v["hit_bytes"] for v in parts)
    total = hit + sum(v["miss_bytes"] for v in parts)
    return hit / total if total else 0.0
