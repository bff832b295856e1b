"""`gemm_body_laws`: the GEMM's efficiency, step and fixed cycles per GEMM body, and apart for the megakernel.

A GEMM body is what `megasim.contract.resources.gemm_body` names: the block's threads, each thread's
register block, vector or scalar loads. The per-block traces fit one law per body with a third of the
error of one law for all (docs/decisions.md, "One GEMM law per GEMM body"), and the megakernel's GEMM
blocks take 0-6% longer than the GEMM kernel's for the same work ("The megakernel's GEMM blocks have laws of
their own"). A body with no entry takes the model's `gemm` entries.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from megasim.contract.errors import MegasimError
from megasim.io.schema import Text, float_in
from megasim.engine.laws.base import Law, law

GemmLawTerm = Literal["compute_efficiency", "step_cycles", "block_fixed_cycles"]
BodyLaws = dict[Text, dict[GemmLawTerm, float_in(0.0, 1e8)]]


@law("gemm_body_laws")
@dataclass(frozen=True, kw_only=True)
class GemmBodyLaws(Law):
    mechanism = "gemm_constants"
    nonfused: BodyLaws = field(default_factory=dict, metadata={"help": "per GEMM body, the GEMM kernel's law"})
    fused: BodyLaws = field(default_factory=dict, metadata={
        "help": "per GEMM body, the megakernel's GEMM blocks' law where it differs; missing: nonfused's"})

    def check(self, origin: str) -> None:
        for kind in ("nonfused", "fused"):
            bad = sorted(body for body, terms in getattr(self, kind).items()
                         if not 1e-4 <= terms.get("compute_efficiency", 1.0) <= 1.0)
            if bad:
                raise MegasimError(f"{origin}: gemm_body_laws {kind} {bad}: compute_efficiency must be a "
                                   "fraction in [1e-4, 1]")

    def for_megakernel(self) -> GemmBodyLaws:
        """This law as the megakernel's blocks run: `fused` over `nonfused`."""
        return replace(self, nonfused={**self.nonfused, **self.fused}) if self.fused else self

    def gemm_terms(self, body: str) -> dict:
        """The GEMM's constants of `body` (term -> value), empty where the body has none."""
        return self.nonfused.get(body) or {}
