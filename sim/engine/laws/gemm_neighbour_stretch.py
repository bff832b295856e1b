"""`gemm_neighbour_stretch`: a block works slower beside a working GEMM block on its SM.

Per-block traces show an input transform taking 1.2-1.6x longer while a GEMM block works on its SM than
while none does, nearly whatever the number of GEMMs (docs/decisions.md, "A GEMM weighs 2 in an SM's
issue"): the GEMM's shared-memory loads keep the load/store pipe busy. A block of type t takes
1 + stretch_t x f as long, f the fraction of its jobs' time a GEMM worked there; the engine keeps that
time per SM (`megasim.engine.neighbours`) and applies it in its compiled stretched machine
(`megasim.engine.core`), so a profile without this law pays nothing for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from megasim.contract.spec import OpName
from megasim.io.schema import float_in
from megasim.engine.laws.base import Law, law, per_type


@law("gemm_neighbour_stretch")
@dataclass(frozen=True, kw_only=True)
class GemmNeighbourStretch(Law):
    mechanism = "neighbour_stretch"
    stretch: dict[OpName, float_in(0.0, 100.0)] = field(
        default_factory=dict, metadata={"help": "per task type, the extra fraction of its time beside a GEMM; "
                                                "missing: 0"})

    def stretch_by_type(self) -> np.ndarray | None:
        """float64[op]: each type's factor; None where every factor is 0 (the default machine runs)."""
        if not any(self.stretch.values()):
            return None
        return per_type(self.stretch, 0.0)
