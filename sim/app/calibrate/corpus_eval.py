"""The model against the generated corpus: the fidelity targets on shapes unlike the paper's.

Every corpus run (`scenarios/calibrations/raw/<gpu>_corpus.jsonl`: per shape two mappings x static and
persistent, and the non-fused graph) is predicted under a profile. `corpus_summary` states, per split,
what the fidelity targets ask: fused and non-fused MAPE, the winner call on every shape whose measured
margin exceeds 3%, and how many predicted margins land within 3 points of the measured one. Pure
functions over the rows, so CI recomputes them from the committed predictions.
"""
from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

DECIDED_MARGIN = 0.03
MARGIN_POINTS = 0.03
SLICES = {"batch 1": lambda r: r["layer"]["n"] == 1, "C = 3": lambda r: r["layer"]["c"] == 3,
          "F(2)": lambda r: r["variant"] == 2, "F(4)": lambda r: r["variant"] == 4,
          "F(6)": lambda r: r["variant"] == 6, "persistent": lambda r: r["mode"] == "persistent"}


def _predict_shape(job) -> list[dict]:
    from megasim.app.calibrate.predict import predict_fused, predict_nonfused
    line, spec = job
    runs = line["runs"]
    nonfused = predict_nonfused(runs[0], spec)[0]
    keys = ("strategy", "params", "fused_us", "nonfused_us", "variant", "layer", "mode")
    return [{**{k: r[k] for k in keys}, "split": line["split"], "shape": line["shape"],
             "pred_fused_us": predict_fused(r, spec), "pred_nonfused_us": nonfused} for r in runs]


def predict_corpus(path: Path, spec, jobs: int = 2, splits=("train", "heldout"), shown: bool = True,
                   lines: list[dict] | None = None) -> list[dict]:
    """Every run of the corpus at `path` (or its `lines`, as `raw.load_corpus` read and checked them) predicted."""
    from megasim.app.calibrate.jobs import largest_first, progress
    from megasim.app.calibrate.raw import load_corpus
    lines = load_corpus(path) if lines is None else lines
    work = [(line, spec) for line in lines if line["runs"] and line["split"] in splits]
    costs = [sum(r["fused_us"] for r in line["runs"]) + line["runs"][0]["nonfused_us"] for line, _ in work]
    with ProcessPoolExecutor(jobs) as pool, progress(f"simulating {len(work)} corpus shapes", len(work), shown) as tick:
        return [row for part in largest_first(pool, _predict_shape, work, costs, tick) for row in part]


def _mape(pred, meas) -> float:
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    return float(np.mean(np.abs(pred / meas - 1))) if len(meas) else float("nan")


def by_shape(rows: list[dict]) -> dict[str, list]:
    shapes: dict[str, list] = {}
    for r in rows:
        shapes.setdefault(r["shape"], []).append(r)
    return shapes


def fastest_runs(shapes: dict[str, list]) -> list[dict]:
    """Each shape's run (`by_shape`) under its fastest measured mapping, where the fusion margin is read."""
    return [min(runs, key=lambda r: r["fused_us"]) for runs in shapes.values()]


def _split_summary(rows: list[dict]) -> dict:
    shapes = by_shape(rows)
    calls = [(best["nonfused_us"] / best["fused_us"] - 1, best["pred_nonfused_us"] / best["pred_fused_us"] - 1)
             for best in fastest_runs(shapes)]
    decided = [(m, p) for m, p in calls if abs(m) > DECIDED_MARGIN]
    return {"shapes": len(shapes), "runs": len(rows),
            "fused_mape": _mape([r["pred_fused_us"] for r in rows], [r["fused_us"] for r in rows]),
            "nonfused_mape": _mape([v[0]["pred_nonfused_us"] for v in shapes.values()],
                                   [v[0]["nonfused_us"] for v in shapes.values()]),
            "decided_shapes": len(decided), "winner_right": sum((m > 0) == (p > 0) for m, p in decided),
            "margin_within_3_points": sum(abs(m - p) <= MARGIN_POINTS for m, p in calls),
            "predicts_fusion_wins": sum(p > 0 for _, p in calls),
            "measured_fusion_wins": sum(m > 0 for m, _ in calls)}


def corpus_summary(rows: list[dict]) -> dict:
    out = {split: _split_summary([r for r in rows if r["split"] == split]) for split in ("train", "heldout")}
    held = [r for r in rows if r["split"] == "heldout"]
    out["heldout_fused_mape_by_slice"] = {
        name: _mape(*zip(*sel)) if (sel := [(r["pred_fused_us"], r["fused_us"]) for r in held if keep(r)]) else None
        for name, keep in SLICES.items()}
    return out


def validate_corpus(spec, gpu: str, corpus_path: Path, out: Path, jobs: int, log,
                    shown: bool = True, lines: list[dict] | None = None) -> tuple[list[str], list[dict]]:
    """The held-out corpus shapes under the profile: their predictions file; the report's section and the rows."""
    from megasim.io.writing import write_then_rename
    rows = predict_corpus(corpus_path, spec, jobs, splits=("heldout",), shown=shown, lines=lines)
    summary = corpus_summary(rows)
    with write_then_rename(out / "results" / "calibration" / f"corpus_predictions_{gpu}.json") as tmp:
        tmp.write_text(json.dumps({"corpus": str(corpus_path), "summary": summary, "rows": rows}, indent=1))
    log(f"corpus: {summary['heldout']}")
    return corpus_section(summary), rows


def corpus_section(summary: dict) -> list[str]:
    h = summary["heldout"]
    lines = ["## Held-out corpus shapes (never fitted)", "",
             "Generated shapes unlike the paper's: batch 1-256, C and K 3-1024, ragged and non-square, F(2)/F(4)/F(6) "
             "(`scenarios/calibrations/raw/<gpu>_corpus.jsonl`). Targets in brackets.", "",
             "| | value | target |", "|---|---|---|",
             f"| shapes / fused runs | {h['shapes']} / {h['runs']} | |",
             f"| fused MAPE | {h['fused_mape']:.1%} | <= 6% |",
             f"| non-fused MAPE | {h['nonfused_mape']:.1%} | <= 6% |",
             f"| winner right where the measured margin exceeds 3% | {h['winner_right']} of {h['decided_shapes']} | all |",
             f"| predicted margin within 3 points of measured | {h['margin_within_3_points']} of {h['shapes']} | >= 90% |",
             f"| shapes called fused, predicted / measured | {h['predicts_fusion_wins']} / {h['measured_fusion_wins']} | |",
             "", "Fused MAPE by slice: " + ", ".join(f"{k} {v:.1%}" for k, v in summary["heldout_fused_mape_by_slice"].items()
                                                   if v is not None) + ".", ""]
    return lines


__all__ = ["by_shape", "corpus_section", "corpus_summary", "fastest_runs", "predict_corpus", "validate_corpus"]
