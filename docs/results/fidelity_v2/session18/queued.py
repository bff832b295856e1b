"""Study patch: only a fraction of a task type's FP32 work queues for its SM's issue; the rest is latency.

An input block alone takes the same time as before (its FP32 work at the SM's full rate plus its latency); beside n
blocks that share the SM it takes s x fp x n + (1 - s) x fp + latency, s the queued fraction (docs/calibration-analysis.md,
session 18, items 2-4: a traced input block shares 0.4-0.6 of its time alone per extra block of its kind, and the
slowdown is in the memory system, not the SM's issue; the model's whole FP32 work is 0.57-0.78 of its time).
"""
import numpy as np

from megasim.contract.problem import OP_NAMES, Op
from megasim.engine import blocks
from megasim.engine.blocks import view

_ORIGINAL = blocks.BlockColumns._block_work


def install(fractions: dict) -> None:
    share = np.array([float(fractions.get(OP_NAMES[o], 1.0)) for o in Op])

    def _block_work(self, order, graph, gpu, scale):
        _ORIGINAL(self, order, graph, gpu, scale)
        s = share[np.asarray(self.op)]
        fp = np.asarray(self.fp)
        self.added = view(np.asarray(self.added) + (1.0 - s) * fp / gpu.fp32_flops_per_cycle_per_sm)
        self.fp = view(fp * s)

    blocks.BlockColumns._block_work = _block_work
