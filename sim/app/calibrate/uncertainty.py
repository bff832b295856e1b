"""Prediction intervals from the held-out residuals of a calibration.

A point prediction without its error invites over-reading: the H200 model's held-out fused error is a few
percent, so a predicted 2% win for fusion says little. `megasim validate` measures how far the held-out
runs fell from their predictions and records it in the profile's [uncertainty] section:
- fused and non-fused: the 5th and 95th percentiles of measured / predicted time (a 90% interval is then
  prediction x those factors);
- the fusion margin (non-fused / fused - 1): the percentiles of measured minus predicted margin, so the
  fused-vs-non-fused call can say "too close to call" when its interval contains zero.
- the mapping gain: how much of a predicted gain of one mapping over the strategy's default mapping the
  measurements showed, the least-squares slope (through the origin) of measured on predicted log gain over
  the held-out runs the model predicted faster than their layer's default, clipped to [0, 1]. A search is
  drawn to exactly the points the model over-predicts, so it counts only this share of a predicted mapping
  gain (`search.objective.evaluate`). The H200 runs showed about a third: predicted gains of 0.8% were
  measured as 0.5%, and up to 13% too optimistic where a search went (docs/decisions.md).
Non-fused residuals count once per layer: every mapping of a layer shares one non-fused run.
"""
from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

COVERAGE = 0.90


def counted(predicted_us: float, default_us: float, share: float) -> float:
    """A mapping's predicted time with only `share` of its predicted (log) gain over the default mapping's
    time `default_us` counted; a predicted loss counts in full."""
    if predicted_us >= default_us:
        return predicted_us
    return default_us * (predicted_us / default_us) ** share


def mapping_gain(rows: list[dict]) -> float:
    """The share of predicted mapping gains that was measured (module docstring); 1.0 (all of it) where no
    run was predicted faster than its layer's default mapping."""
    from megasim.contract.mapping import MAPPINGS
    from megasim.contract.options import declared
    default = {}
    for r in rows:
        defaults = {o.name: o.default for o in declared(MAPPINGS.get(r["strategy"]).options)}
        if r["params"] == defaults:
            default[r["layer"], r["strategy"]] = r
    pred, meas = [], []
    for r in rows:
        d = default.get((r["layer"], r["strategy"]))
        if d is None or d is r or r["pred_fused_us"] >= d["pred_fused_us"]:
            continue
        pred.append(np.log(r["pred_fused_us"] / d["pred_fused_us"]))
        meas.append(np.log(r["fused_us"] / d["fused_us"]))
    if not pred:
        return 1.0
    # exactly rounded sums: a BLAS dot product's last bit differs from one machine to another
    share = math.fsum(a * b for a, b in zip(pred, meas)) / math.fsum(a * a for a in pred)
    return float(min(max(share, 0.0), 1.0))


@dataclass(frozen=True)
class Uncertainty:
    """Held-out residual percentiles of one profile (see the module docstring)."""

    fused_ratio: tuple[float, float]
    nonfused_ratio: tuple[float, float]
    margin_error: tuple[float, float]
    coverage: float = COVERAGE
    heldout_runs: int = 0
    mapping_gain: float = 1.0

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
                           margin_error=pct(margin), coverage=coverage, heldout_runs=len(held),
                           mapping_gain=mapping_gain(held))

    def to_dict(self) -> dict:
        return {"coverage": self.coverage, "heldout_runs": self.heldout_runs, "fused_ratio": list(self.fused_ratio),
                "nonfused_ratio": list(self.nonfused_ratio), "margin_error": list(self.margin_error),
                "mapping_gain": self.mapping_gain}

    @staticmethod
    def from_dict(d: dict) -> Uncertainty:
        return Uncertainty(fused_ratio=tuple(d["fused_ratio"]), nonfused_ratio=tuple(d["nonfused_ratio"]),
                           margin_error=tuple(d["margin_error"]), coverage=float(d["coverage"]),
                           heldout_runs=int(d.get("heldout_runs", 0)), mapping_gain=float(d.get("mapping_gain", 1.0)))

    def call(self, fused_us: float, nonfused_us: float) -> dict:
        """Intervals around one prediction, and the fused-vs-non-fused call they support."""
        margin = nonfused_us / fused_us - 1
        lo, hi = margin + self.margin_error[0], margin + self.margin_error[1]
        verdict = "fused wins" if lo > 0 else "non-fused wins" if hi < 0 else "too close to call"
        return {"coverage": self.coverage,
                "fused_interval_us": [fused_us * self.fused_ratio[0], fused_us * self.fused_ratio[1]],
                "nonfused_interval_us": [nonfused_us * self.nonfused_ratio[0], nonfused_us * self.nonfused_ratio[1]],
                "margin": margin, "margin_interval": [lo, hi], "call": verdict}
