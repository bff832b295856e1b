"""`resident_sharing`: every block working on an SM shares its FP32 issue until the block ends, weighted by type.

Per-block traces show a GEMM block's work growing as a + b x the GEMM blocks working beside it whether or not
they are in their FP32 phase (docs/decisions.md, "The resident form"), and a GEMM slowing a transform about
twice as much as another transform does ("A GEMM weighs 2 in an SM's issue"). So a block keeps its share of
the SM from its work's start to its end, and a block of type t gets capacity x w_t / W, W the weights of all
blocks working there (`megasim.engine.weighted_psqueue`). With no weights every block weighs 1 and keeps the
default's per-block cap of 2 x threads FLOPs per cycle (a sticky `megasim.engine.psqueue.PSQueue`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from megasim.contract.spec import OpName
from megasim.io.schema import float_in
from megasim.engine.blocks import view
from megasim.engine.laws.base import Law, law, per_type
from megasim.engine.psqueue import PSQueue
from megasim.engine.weighted_psqueue import WeightedPSQueue


@law("resident_sharing")
@dataclass(frozen=True, kw_only=True)
class ResidentSharing(Law):
    mechanism = "fp32_sharing"
    issue_weight: dict[OpName, float_in(0.0, 1e6, above=True)] = field(
        default_factory=dict, metadata={"help": "per task type, its weight in an SM's FP32 issue; missing: 1"})

    def fp32_queues(self, clock, spec, threads: int, op, pending, done) -> list:
        """One queue per SM for a launch of `threads`-thread blocks whose tasks have types `op`."""
        if not self.issue_weight:
            return [PSQueue(clock, spec.fp32_flops_per_cycle_per_sm, 2.0 * threads, pending, done, True)
                    for _ in range(spec.sm_count)]
        weight = view(per_type(self.issue_weight, 1.0)[np.asarray(op)])
        return [WeightedPSQueue(clock, spec.fp32_flops_per_cycle_per_sm, weight, pending, done)
                for _ in range(spec.sm_count)]
