"""How accurate a model must be to meet the two ranking targets, against how accurate this one is.

Both targets compare differences, not times. "Spearman >= 0.9 within every layer" orders 13 mappings whose best
half the hardware puts within a fraction of a percent of each other, and "the predicted fusion margin within 3
points of the measured one" subtracts two predictions, so it adds their errors. Each is set here against an
error model a reader can check: per-mapping (or per-shape) relative errors drawn independently from a normal
distribution. That is a floor on what the targets ask: errors shared between mappings or between the fused and
non-fused prediction would help, and the measured correlations say how little they are shared today. Pure
functions over the predictions files (seeded), so CI recomputes the report's figures.
"""
from __future__ import annotations

from statistics import NormalDist

import numpy as np

from megasim.app.calibrate.corpus_eval import MARGIN_POINTS, by_shape, fastest_runs
from megasim.app.calibrate.metrics import SPEARMAN_MIN_MAPPINGS, by_layer
from megasim.contract.ranking import spearman

SPEARMAN_TARGET = 0.9
MARGIN_SHARE = 0.9
MAPE_TARGET = 0.06
ERROR_SDS = (0.005, 0.01, 0.02)


def _layers(rows) -> dict:
    return {name: runs for name, runs in sorted(by_layer(rows).items()) if len(runs) >= SPEARMAN_MIN_MAPPINGS}


def ranking_reach(rows, sds=ERROR_SDS, draws: int = 400, seed: int = 0) -> dict:
    """Per layer with >= 10 mappings: the spread of its best half of mappings on the hardware and the model's
    residual spread (standard deviations of log time, the model's after removing its mean error on the layer),
    and for each error sd in `sds` how many layers would reach Spearman >= 0.9 in expectation if the model's
    per-mapping errors were independent normal with that sd."""
    rng = np.random.default_rng(seed)
    layers, expected = {}, {sd: 0.0 for sd in sds}
    for name, runs in _layers(rows).items():
        meas = np.log([r["fused_us"] for r in runs])
        resid = np.log([r["pred_fused_us"] for r in runs]) - meas
        best = np.sort(meas)[:len(meas) // 2 + 1]
        layers[name] = {"best_half_sd": float(best.std()), "model_residual_sd": float(resid.std())}
        for sd in sds:
            hits = [spearman(meas + rng.normal(0.0, sd, len(meas)), meas) >= SPEARMAN_TARGET for _ in range(draws)]
            expected[sd] += float(np.mean(hits))
    return {"layers": layers, "expected_layers": {str(sd): v for sd, v in expected.items()}}


def margin_reach(corpus_rows) -> dict:
    """Under each held-out corpus shape's fastest measured mapping: the spread of the fused and non-fused relative
    errors, their correlation, the 90th percentile of |margin error|, and the sd that independent errors of equal
    size on both sides would need for 90% of margins to land within 3 points."""
    best = fastest_runs(by_shape(corpus_rows))
    fused = np.array([r["pred_fused_us"] / r["fused_us"] - 1 for r in best])
    nonfused = np.array([r["pred_nonfused_us"] / r["nonfused_us"] - 1 for r in best])
    margin = np.array([r["pred_nonfused_us"] / r["pred_fused_us"] - r["nonfused_us"] / r["fused_us"] for r in best])
    z = NormalDist().inv_cdf(0.5 + MARGIN_SHARE / 2)
    return {"shapes": len(best), "fused_error_sd": float(fused.std()), "nonfused_error_sd": float(nonfused.std()),
            "error_correlation": float(np.corrcoef(fused, nonfused)[0, 1]) if len(best) > 2 else float("nan"),
            "margin_error_p90": float(np.percentile(np.abs(margin), 90)) if len(best) else float("nan"),
            "needed_sd": MARGIN_POINTS / (z * np.sqrt(2))}


def reach_section(rows, corpus_rows=None) -> list[str]:
    """The report's section: what the two ranking targets ask of a model, against this one."""
    rank = ranking_reach(rows)
    if not rank["layers"]:
        return []
    halves = [v["best_half_sd"] for v in rank["layers"].values()]
    resid = [v["model_residual_sd"] for v in rank["layers"].values()]
    met = sum(spearman([r["pred_fused_us"] for r in runs], [r["fused_us"] for r in runs]) >= SPEARMAN_TARGET
              for runs in _layers(rows).values())
    exp = ", ".join(f"{float(sd):.1%}: {v:.1f}" for sd, v in rank["expected_layers"].items())
    lines = ["## What the ranking targets ask of a model", "",
             f"Within each layer the best half of the mappings lie within a standard deviation of "
             f"{min(halves):.1%}-{max(halves):.1%} of each other on the hardware; the model's error spread within a "
             f"layer is {min(resid):.1%}-{max(resid):.1%}. With independent per-mapping errors of a given spread, the "
             f"layers expected to reach Spearman >= {SPEARMAN_TARGET} (of {len(halves)}) are {exp}. This model "
             f"reaches it on {met}. (`megasim.app.calibrate.target_reach`)", ""]
    if corpus_rows:
        m = margin_reach(corpus_rows)
        lines += [f"A predicted fusion margin within {100 * MARGIN_POINTS:.0f} points of the measured one on "
                  f"{MARGIN_SHARE:.0%} of shapes needs fused and non-fused errors of at most {m['needed_sd']:.1%} "
                  f"spread each, if independent. On the {m['shapes']} held-out corpus shapes, under each one's "
                  f"fastest measured mapping, they spread {m['fused_error_sd']:.1%} and {m['nonfused_error_sd']:.1%} "
                  f"(correlation {m['error_correlation']:.2f}), and 90% of margins are within "
                  f"{100 * m['margin_error_p90']:.1f} points. A model at the corpus MAPE target of "
                  f"{MAPE_TARGET:.0%} on both sides would spread about {MAPE_TARGET / np.sqrt(2 / np.pi):.1%} each "
                  f"(a normal error's mean absolute value is 0.80 of its sd).", ""]
    return lines


__all__ = ["margin_reach", "ranking_reach", "reach_section"]
