"""How long a GEMM block has worked on each SM: what the law `gemm_neighbour_stretch` charges for.

Per-block traces show an input transform taking 1.2-1.6x longer while a GEMM block works on its SM than while
none does, nearly whatever the number of GEMMs (docs/decisions.md,
"A GEMM weighs 2 in an SM's issue"): the GEMM's shared-memory
loads keep the SM's load/store pipe busy, and the transform's loads queue behind them. Its FP32 share cannot say
that (its FLOPs are few), so the engine keeps, per SM, the time during which at least one GEMM block worked
there, and stretches a block's work by its op's factor times the fraction of its jobs' time that was so.
"""
from __future__ import annotations

import numpy as np

from megasim.engine.blocks import column


class GemmNeighbours:
    """Per SM: GEMM blocks working now, and the cycles (up to `since`) during which any did."""

    __slots__ = ("working", "busy", "since")

    def __init__(self, sm_count: int):
        self.working = column([0] * sm_count, np.int32)
        self.busy = column([0.0] * sm_count, np.float64)
        self.since = column([0.0] * sm_count, np.float64)

    def _advance(self, now: float, sm: int) -> None:
        if self.working[sm]:
            self.busy[sm] += now - self.since[sm]
        self.since[sm] = now

    def enter(self, now: float, sm: int) -> None:
        self._advance(now, sm)
        self.working[sm] += 1

    def leave(self, now: float, sm: int) -> None:
        self._advance(now, sm)
        self.working[sm] -= 1

    def busy_until(self, now: float, sm: int) -> float:
        """Cycles with a GEMM working on `sm`, from the run's start to `now`."""
        self._advance(now, sm)
        return self.busy[sm]
