"""`GPUSpec.write_back = "detached"` or `"absorbed"`: stores that retire into L2 and are not waited for.

A real block's store completes when L2 has it; L2 writes the dirty line back to DRAM later, so the block does not
wait for its own write-back. It does wait once L2 holds as many unwritten bytes as it can take: then a store
needs a line that must first be written back. Both forms keep the dirty bytes within `dirty_l2_fraction` of
the L2 and, past that, make a block's write-back one of its own jobs again, as under "blocking". Below it:

- "detached": the write-back is a DRAM job of its own, sharing the DRAM with every other job at once, and its
  bytes leave the budget when it is done (session 11, finding 5);
- "absorbed": the write-back does not happen during the run at all, as Nsight Compute shows for a kernel that
  writes less than about 25 MB on the H200 (docs/results/write_traffic_h200; finding 7), so the budget only fills.

A megakernel, which spreads its stores between compute, keeps few bytes dirty and its blocks are freed; a
non-fused transform kernel, streaming its whole output, fills the budget and waits as before.

One DRAM queue serves the whole run here, so write-backs still in flight when a kernel ends keep sharing the
DRAM with the next kernel's jobs instead of draining beside them at full rate.
"""
from __future__ import annotations

from megasim.engine.psqueue import PSQueue


class WriteBack:
    """The run's DRAM queue and the dirty bytes; under "detached" block b's write-back is DRAM job `nblocks + b`."""

    __slots__ = ("cols", "dram_cost", "budget", "dirty", "queue", "blocks_done", "absorbed")

    def __init__(self, cols, dram_cost: list, budget: float, absorbed: bool = False, graph=None, preceding_ops=()):
        """An absorbing L2 starts as full as the stores of `preceding_ops`, the stages launched before the run,
        left it (a non-fused kernel simulated alone, as the fit does, finds its predecessors' output dirty in L2).
        Only this form reads the graph's bytes, so the default "blocking" run pays nothing for it."""
        self.cols, self.dram_cost, self.budget, self.absorbed = cols, dram_cost, budget, absorbed
        self.dirty = 0.0
        if absorbed and preceding_ops:
            written = graph.bytes_per_task()[1]
            self.dirty = min(budget, sum(float(written[graph.op == op].sum()) for op in preceding_ops))
        self.queue = None
        self.blocks_done = None

    def queue_for(self, clock, capacity: float, job_cap: float, done) -> PSQueue:
        """The DRAM queue for the next kernel: the run's one queue, with that kernel's per-block cap."""
        if self.queue is None:
            self.queue = PSQueue(clock, capacity, job_cap, self.cols.pending, self.done)
        else:
            self.queue.job_cap = min(job_cap, capacity)
        self.blocks_done = done
        return self.queue

    def done(self, now: float, job: int) -> None:
        n = len(self.cols)
        if job >= n:
            self.dirty -= self.cols.written[job - n]
        else:
            self.blocks_done(now, job)

    def detach(self, now: float, b: int, dram: float) -> float:
        """Block b's DRAM bytes (misses and write-back) less the write-back it leaves behind, if the budget has room.
        "detached": the write-back still goes to DRAM, as a job of its own, and leaves the budget when done.
        "absorbed": it does not go to DRAM at all while the budget has room (L2 keeps the dirty lines, which
        Nsight Compute shows: a kernel writing less than about 25 MB writes nothing back before it ends,
        docs/results/write_traffic_h200); once the budget is full, every store evicts as many dirty bytes,
        and the block waits for that write-back, as under "blocking"."""
        cols = self.cols
        written = cols.written[b]
        if not written or self.dirty + written > self.budget:
            return dram
        self.dirty += written
        if self.absorbed:
            return dram - written
        n = len(cols)
        cols.pending[n + b] = 1
        self.queue.submit(now, written * cols.scale[b] * self.dram_cost[cols.op[b]], n + b)
        return dram - written
