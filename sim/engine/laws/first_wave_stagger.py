"""`first_wave_stagger`: a non-fused kernel's first wave on an SM ends in arrival order, not together.

Per-block traces: three GEMM blocks started together end at 79, 88 and 102 µs, as the oldest warps are
issued first (docs/decisions.md, "The non-fused GEMM's first wave is staggered"). Started together, a block
of type t and of rank r of k on its SM does 1 + stagger_t x (2r / (k - 1) - 1) of its work. `calibrate`
reads the GEMM's from the trace sample (`megasim.app.calibrate.end_order.stagger_reading`). The
megakernel's first wave is left alone: its blocks start work as their parents end (staggering its GEMMs
cost a Spearman layer and 0.6 points of regret, 2026-11-27).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from megasim.contract.resources import blocks_per_sm
from megasim.contract.spec import OpName
from megasim.io.schema import float_in
from megasim.engine.laws.base import Law, law, per_type


def staggered(kernels, slots: list[int], sm_count: int, stagger: np.ndarray) -> np.ndarray | None:
    """Per-block work factors that make each kernel's first wave end in arrival order on every SM (`stagger`
    is the factor of each task): the first wave fills one slot of every SM per round, so a block's rank on its
    SM is its index in the kernel over the SM count. That holds for the round-robin policies
    (`in_order_round_robin`, `gpc_interleaved`); under `first_free`, `replay` or a ready queue, which place or
    order the first wave otherwise, the ranks are only approximate. A launch whose blocks poll counters (the
    megakernel) is left alone. None where nothing is staggered."""
    if not stagger.any():
        return None
    factors = [np.ones(len(k.tasks)) for k in kernels]
    for f, kernel, k in zip(factors, kernels, slots):
        if k > 1 and not kernel.check_deps:
            first = min(len(f), k * sm_count)
            rank = np.arange(first) // sm_count
            f[:first] = 1.0 + stagger[kernel.tasks[:first]] * (2.0 * rank / (k - 1) - 1.0)
    return np.concatenate(factors)


@law("first_wave_stagger")
@dataclass(frozen=True, kw_only=True)
class FirstWaveStagger(Law):
    mechanism = "work_factors"
    stagger: dict[OpName, float_in(0.0, 0.9)] = field(
        default_factory=dict, metadata={"help": "per task type, how far apart its first wave's blocks end; "
                                                "missing: 0, they end together"})

    def work_factors(self, kernels, spec, op: np.ndarray) -> np.ndarray | None:
        """Each block's factor in a run of `kernels` over tasks of types `op`; None where nothing changes."""
        if not any(self.stagger.values()):
            return None
        return staggered(kernels, [blocks_per_sm(spec, k.resources) for k in kernels], spec.sm_count,
                         per_type(self.stagger, 0.0)[op])
