"""Prediction intervals from the held-out residuals of a calibration.

A point prediction without its error invites over-reading: the H200 model's held-out fused error is a few
percent, so a predicted 2% win for fusion says little. `megasim validate` measures how far the held-out
runs fell from their predictions and records it in the profile's [uncertainty] section:
- fused and non-fused: the 5th and 95th percentiles of measured / predicted time (a 90% interval is then
  prediction x those factors);
- the fusion margin (non-fused / fused - 1): the percentiles of measured minus predicted margin, so the
  fused-vs-non-fused call can say "too close to call" when its interval contains zero.
Non-fused residuals count once per layer: every mapping of a layer shares one non-fused run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COVERAGE = 0.90


@dataclass(frozen=True)
class Uncertainty:
    """Held-out residual percentiles of one profile (see the module docstring)."""

    fused_ratio: tuple[float, float]
    nonfused_ratio: tuple[float, float]
    margin_error: tuple[float, float]
    coverage: float = COVERAGE
    heldout_runs: int = 0

    @staticmethod
    def from_rows(rows: list[dict], coverage: float = COVERAGE) -> Uncertainty | None:
        held = [r for r in rows if r["split"] == "heldout"]
        if len(held) < 10:
            return None
        q = ((1 - coverage) / 2 * 100, (1 + coverage) / 2 * 100)
        per_layer = {r["layer"]: r for r in held}.values()
        pct = lambda xs: tuple(float(v) for v in np.percentile(xs, q))  # noqa: E731
        margin = [(r["nonfused_us"] / r["fused_us"] - 1) - (r["pred_nonfused_us"] / r["pred_fused_us"] - 1)
                  for r in held]
        return Uncertainty(fused_ratio=pct([r["fused_us"] / r["pred_fused_us"] for r in held]),
                           nonfused_ratio=pct([r["nonfused_us"] / r["pred_nonfused_us"] for r in per_layer]),
                           margin_error=pct(margin), coverage=coverage, heldout_runs=len(held))

    def to_dict(self) -> dict:
        return {"coverage": self.coverage, "heldout_runs": self.heldout_runs, "fused_ratio": list(self.fused_ratio),
                "nonfused_ratio": list(self.nonfused_ratio), "margin_error": list(self.margin_error)}

    @staticmethod
    def from_dict(d: dict) -> Uncertainty:
        return Uncertainty(fused_ratio=tuple(d["fused_ratio"]), nonfused_ratio=tuple(d["nonfused_ratio"]),
                           margin_error=tuple(d["margin_error"]), coverage=float(d["coverage"]),
                           heldout_runs=int(d.get("heldout_runs", 0)))

    def call(self, fused_us: float, nonfused_us: float) -> dict:
        """Intervals around one prediction, and the fused-vs-non-fused call they support."""
        margin = nonfused_us / fused_us - 1
        lo, hi = margin + self.margin_error[0], margin + self.margin_error[1]
        verdict = "fused wins" if lo > 0 else "non-fused wins" if hi < 0 else "too close to call"
        return {"coverage": self.coverage,
                "fused_interval_us": [fused_us * self.fused_ratio[0], fused_us * self.fused_ratio[1]],
                "nonfused_interval_us": [nonfused_us * self.nonfused_ratio[0], nonfused_us * self.nonfused_ratio[1]],
                "margin": margin, "margin_interval": [lo, hi], "call": verdict}
