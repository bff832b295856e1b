"""Agreement between predicted and measured runs: the numbers the calibration report states.

Pure functions over the predictions file, so CI recomputes them from
committed data in milliseconds.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from megasim.contract.ranking import regret, spearman

SPEARMAN_MIN_MAPPINGS = 10
DECIDED_MARGIN = 0.03  # a winner call worth scoring: the measured margin exceeds 3% (the fidelity targets' rule)


def mape(pred, meas) -> float:
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    return float(np.mean(np.abs(pred - meas) / meas)) if len(meas) else float("nan")


def by_layer(rows: list[dict]) -> dict[str, list]:
    """The runs of each layer."""
    layers = defaultdict(list)
    for r in rows:
        layers[r["layer"]].append(r)
    return layers


def simulators_pick(runs: list[dict]) -> dict:
    """The run of a layer's mappings that the simulator predicts fastest: the one its calls are judged under."""
    return min(runs, key=lambda r: r["pred_fused_us"])


def summarise(rows: list[dict]) -> dict:
    """rows: one per measured run, with layer, split, measured and predicted fused/non-fused times."""
    out = {"mape": {}, "spearman": {}, "winner": {}, "regret": {}}
    for split in ("train", "heldout"):
        part = [r for r in rows if r["split"] == split]
        out["mape"][split] = {
            "fused": mape([r["pred_fused_us"] for r in part], [r["fused_us"] for r in part]),
            "nonfused": mape(*zip(*{r["layer"]: (r["pred_nonfused_us"], r["nonfused_us"]) for r in part}.values()))
            if part else float("nan"),
            "runs": len(part)}
    for name, runs in sorted(by_layer(rows).items()):
        if len(runs) >= SPEARMAN_MIN_MAPPINGS:
            out["spearman"][name] = spearman([r["pred_fused_us"] for r in runs], [r["fused_us"] for r in runs])
        pick = simulators_pick(runs)
        out["regret"][name] = regret(pick["fused_us"], [r["fused_us"] for r in runs])
        predicted_fused_wins = pick["pred_fused_us"] < pick["pred_nonfused_us"]
        measured_fused_wins = pick["fused_us"] < pick["nonfused_us"]
        out["winner"][name] = {"predicted": "fused" if predicted_fused_wins else "non-fused",
                               "measured": "fused" if measured_fused_wins else "non-fused",
                               "right": predicted_fused_wins == measured_fused_wins,
                               "mapping": {"strategy": pick["strategy"], **pick["params"]}}
    return out


def decided_winners(rows: list[dict], summary: dict, margin: float = DECIDED_MARGIN) -> tuple[int, int]:
    """(layers called right, layers) among those whose measured fusion margin under the simulator's pick exceeds
    `margin`. A margin inside a few percent is inside every profile's per-run error, so its call is mostly the
    sign of that error; the fidelity targets score the corpus's calls this way, and the report scores the paper
    layers alike."""
    decided = right = 0
    layers = by_layer(rows)
    for name, w in summary["winner"].items():
        pick = simulators_pick(layers[name])
        if abs(pick["nonfused_us"] / pick["fused_us"] - 1) > margin:
            decided += 1
            right += w["right"]
    return right, decided
