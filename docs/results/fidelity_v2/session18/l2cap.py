"""Study patch: a block's bytes through L2 at no more than its type's rate, inside the L2 queue's sharing.

Item 2: an input block alone moves its bytes at 7-10 bytes a cycle, its loads in flight over their latency
(Little's law), and beside its own kind it slows by the chip's memory queue. The engine's per-job cap on the L2
and DRAM queues is the SM's path over the launch's blocks per SM (64 / k bytes a cycle), the same for every type.
Here each capped task type's L2 jobs go to a queue of their own with the cap min(that, CAP[type]); the queues
each keep the L2's whole rate, which Nsight Compute never finds above 76% busy (an approximation: in the
megakernel the types' L2 traffic no longer adds up). Types not named keep the one shared queue.
"""
import numpy as np

import megasim.engine.blocks as blocks
import megasim.engine.core as core
from megasim.contract.problem import OP_NAMES, Op

_COLS = {}


def install(caps: dict) -> None:
    """`caps`: {task type name: its blocks' bytes a cycle through L2}."""
    original_work, original_queue = blocks.BlockColumns._block_work, core.PSQueue
    cap_of = {int(o): caps[OP_NAMES[o]] for o in Op if OP_NAMES[o] in caps}

    def block_work(self, order, graph, gpu, scale):
        original_work(self, order, graph, gpu, scale)
        _COLS["op"] = np.asarray(self.op)
        _COLS["l2"] = gpu.l2_bytes_per_cycle
    blocks.BlockColumns._block_work = block_work

    def queue(clock, capacity, job_cap, pending, done, sticky=False):
        shared = original_queue(clock, capacity, job_cap, pending, done, sticky)
        if sticky or capacity != _COLS.get("l2"):
            return shared
        own = {t: original_queue(clock, capacity, min(job_cap, c), pending, done).submit for t, c in cap_of.items()}
        ops, common = _COLS["op"], shared.submit

        class Split:
            @staticmethod
            def submit(now, amount, b):
                own.get(int(ops[b]), common)(now, amount, b)
        return Split()
    core.PSQueue = queue
