"""Builds measured whole: the raw file of every build `bench` timed, predicted build by build.

`<gpu>_builds.json` (raw, next to the runs) holds, per paper layer, the time of each build of the decision
space (`megasim.contract.build`) that `bench` measured at the layer's own partition and mapping. It serves
two things the calibration runs (generic body, static F(4)) cannot: the warp-tiled GEMM body's laws
(`body_law`), and the question the simulator exists to answer, which build to run: `pick_rows` ranks every
measured build of a layer by its prediction and reports the measured time of the pick against the fastest
measured (the *regret* of following the model).
"""
from __future__ import annotations

import math

import numpy as np

from megasim.app.calibrate.jobs import largest_first
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.contract.build import Build
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter


FIT_VARIANTS = (4, 6)  # F(2) builds are never a layer's fastest, and a third of the probes' time
MAX_TASKS = 40_000  # as stage 3: the largest layers cost most of a probe and add nothing the others lack


def precision_of(row: dict) -> str:
    """A measured build's precision: rows written before there was a choice name none, and are FP32."""
    return row.get("precision", "fp32")


def training_rows(rows: list[dict], precision: str = "fp32", **axes) -> list[dict]:
    """The rows stage 4 fits on: training layers' builds at `precision` (FP32: stage 5 fits the 3xTF32 law
    apart), F(4) and F(6), up to `MAX_TASKS` tasks, and each of `axes` (a row field -> its value) as given."""
    return [r for r in rows if r["split"] == "train" and r["variant"] in FIT_VARIANTS and precision_of(r) == precision
            and all(r[k] == v for k, v in axes.items()) and graph_of(r).num_tasks <= MAX_TASKS]


def log_error(rows: list[dict], spec, pool=None) -> float:
    """The mean squared log error of the rows' predictions under `spec`: what stage 4's fits minimise."""
    return float(np.mean([(math.log(r["pred_us"]) - math.log(r["us"])) ** 2 for r in predicted(rows, spec, pool)]))


def build_of(row: dict) -> Build:
    return Build(row["launch"], row["variant"], row["mode"], row["gemm"], precision=precision_of(row))


def predictable(rows: list[dict], spec) -> list[dict]:
    """The rows whose precision `spec`'s model predicts (`predicted_precisions`): a profile without the 3xTF32
    law predicts no 3xTF32 build."""
    from megasim.engine.blocks import predicted_precisions
    known = predicted_precisions(spec.model)
    return [r for r in rows if precision_of(r) in known]


def predict_build(row: dict, spec) -> float:
    """What the model predicts for the build a row measured, on its partition and mapping."""
    engine = SimpyInterpreter(spec, gemm=row["gemm"], precision=precision_of(row))
    if row["launch"] == "fused":
        return engine.run(graph_of(row), mapping_of(row), RunConfig(mode=row["mode"])).time_us
    return engine.run(graph_of(row), None, RunConfig(launch="nonfused")).time_us


def _predict_job(job) -> float:
    row, spec = job
    return predict_build(row, spec)


def predicted(rows: list[dict], spec, pool=None) -> list[dict]:
    """Each row with its prediction (`pred_us`)."""
    jobs = [(r, spec) for r in rows]
    if pool is None:
        times = [_predict_job(j) for j in jobs]
    else:  # the largest layers first, so that no long simulation is left to run alone at the end
        size = [math.prod(r["layer"][f] for f in ("n", "c", "h", "w", "k")) for r in rows]
        times = largest_first(pool, _predict_job, jobs, size)
    return [{**r, "pred_us": t} for r, t in zip(rows, times)]


CLEAR_MARGIN = 0.03  # a fused-vs-non-fused call is judged where the measured margin exceeds 3%


def pick_rows(rows: list[dict], measured: list[dict] | None = None) -> list[dict]:
    """Per layer of predicted rows: the model's pick among the measured builds, the fastest measured build
    (among `measured`, every build timed, where the model predicts only some), the pick's regret (its measured
    time over the fastest's, less one), and the fused-vs-non-fused call: the measured margin (best non-fused
    over best fused, less one: positive where fusion wins) and whether the model's best fused and non-fused
    builds order the same way."""
    out = []
    for name in dict.fromkeys(r["layer"]["name"] for r in rows):
        mine = [r for r in rows if r["layer"]["name"] == name]
        timed = [r for r in measured or rows if r["layer"]["name"] == name]
        pick, best = min(mine, key=lambda r: r["pred_us"]), min(timed, key=lambda r: r["us"])
        launches = {k: [r for r in mine if r["launch"] == k] for k in ("fused", "nonfused")}
        call = {}
        if all(launches.values()):
            meas = {k: min(r["us"] for r in v) for k, v in launches.items()}
            pred = {k: min(r["pred_us"] for r in v) for k, v in launches.items()}
            margin = meas["nonfused"] / meas["fused"] - 1.0
            call = {"fusion_margin": margin, "predicted_margin": pred["nonfused"] / pred["fused"] - 1.0,
                    "call_right": (margin > 0) == (pred["nonfused"] > pred["fused"])}
        out.append({"layer": name, "split": mine[0]["split"], "builds": len(mine),
                    "pick": build_of(pick).label, "pick_pred_us": pick["pred_us"], "pick_us": pick["us"],
                    "best": build_of(best).label, "best_us": best["us"], "best_pred_us": best.get("pred_us"),
                    "regret": pick["us"] / best["us"] - 1.0, **call})
    return out


def _mape(rows) -> str:
    return f"{sum(abs(r['pred_us'] / r['us'] - 1) for r in rows) / len(rows):.1%}" if rows else "-"


def decision_summary(rows: list[dict], measured: list[dict] | None = None) -> dict:
    """The figures that say whether the model decides well, over predicted rows: MAPE over every build, the
    pick's regret (mean and worst; against the fastest of `measured` where given), and the fused-vs-non-fused
    calls right where the margin is clear."""
    picks = pick_rows(rows, measured)
    clear = [p for p in picks if "fusion_margin" in p and abs(p["fusion_margin"]) > CLEAR_MARGIN]
    return {"builds": len(rows), "layers": len(picks),
            "mape": sum(abs(r["pred_us"] / r["us"] - 1) for r in rows) / len(rows),
            "regret_mean": sum(p["regret"] for p in picks) / len(picks),
            "regret_worst": max(p["regret"] for p in picks),
            "clear_calls": len(clear), "clear_calls_right": sum(p["call_right"] for p in clear)}


PAPER = ("## Every build bench measured: which one to run", "paper layers", "`<gpu>_builds.json`")
CORPUS = ("## Every build of the held-out corpus shapes: which one to run", "held-out corpus shapes, which no fit "
          "read,", "`<gpu>_corpus_builds.json`")


def builds_section(rows: list[dict], measured: list[dict] | None = None, what: tuple = PAPER) -> list[str]:
    """The report's section on predicted builds: the error per kind of build, then the pick per layer. `what`:
    the section's title, what the layers are and the file (`PAPER`, `CORPUS`). `measured`: every build timed,
    where the model predicts only some: the regret is against the fastest of them."""
    unpredicted = len(measured) - len(rows) if measured else 0
    kinds = sorted({(r["launch"], r["mode"], r["gemm"], precision_of(r)) for r in rows})
    title, layers, source = what
    lines = [title, "",
             f"{len(rows)} builds of {len({r['layer']['name'] for r in rows})} {layers} each at the layer's "
             f"partition (widened for the warp GEMM body) and paper mapping ({source}). The warp body's "
             "laws are fitted on the training layers' static FP32 builds (`megasim.app.calibrate.body_law`), the "
             "3xTF32 law on `<gpu>_tensor_core.json` (`tensor_law`)."
             + (f" {unpredicted} measured builds are not predicted, since this profile has no law for their "
                "precision; the regret is still against the fastest build measured."
                if unpredicted else ""), "",
             "| launch | mode | GEMM body | precision | train builds | train MAPE | held-out builds | held-out MAPE |",
             "|---|---|---|---|---|---|---|---|"]
    for launch, mode, gemm, precision in kinds:
        mine = [r for r in rows
                if (r["launch"], r["mode"], r["gemm"], precision_of(r)) == (launch, mode, gemm, precision)]
        train, held = ([r for r in mine if r["split"] == s] for s in ("train", "heldout"))
        lines.append(f"| {launch} | {mode if launch == 'fused' else '-'} | {gemm} | {precision} | {len(train)} | "
                     f"{_mape(train)} | {len(held)} | {_mape(held)} |")
    picks = pick_rows(rows, measured)
    lines += ["", "The simulator's pick among a layer's measured builds (the fastest predicted), its measured time, "
              "and the fastest measured build: the regret is what following the model costs. The fusion margin "
              "is the best non-fused build's time over the best fused one's, less one (positive: fusion wins), "
              "measured and predicted.", "",
              "| layer | split | pick | predicted us | measured us | fastest measured | measured us | regret | "
              "fusion margin, measured / predicted |",
              "|---|---|---|---|---|---|---|---|---|"]
    for p in picks:
        margin = (f"{p['fusion_margin']:+.1%} / {p['predicted_margin']:+.1%}" if "fusion_margin" in p else "-")
        lines.append(f"| {p['layer']} | {p['split']} | {p['pick']} | {p['pick_pred_us']:.1f} | {p['pick_us']:.1f} | "
                     f"{p['best']} | {p['best_us']:.1f} | {p['regret']:.1%} | {margin} |")
    d = decision_summary(rows, measured)
    worst = max(picks, key=lambda p: p["regret"])
    lines += ["", f"MAPE over every build {d['mape']:.1%}. Mean regret {d['regret_mean']:.1%}; worst "
              f"{d['regret_worst']:.1%} ({worst['layer']}). Fused-vs-non-fused call right on "
              f"{d['clear_calls_right']} of {d['clear_calls']} layers whose measured margin exceeds "
              f"{CLEAR_MARGIN:.0%}.", ""]
    return lines


def validate_builds(rows: list[dict], spec, jobs: int, out, profile: str, what: tuple = PAPER) -> list[str]:
    """`validate`'s part: every build whose precision the model predicts, predicted under `spec` (written to
    `out` as JSON), and its section."""
    import json
    from concurrent.futures import ProcessPoolExecutor
    from megasim.io.writing import write_then_rename
    known = predictable(rows, spec)
    with ProcessPoolExecutor(jobs) as pool:
        built = predicted(known, spec, pool)
    with write_then_rename(out) as tmp:
        tmp.write_text(json.dumps({"profile": profile, "builds": built, "summary": decision_summary(built, rows)},
                                  indent=0) + "\n")
    return builds_section(built, rows, what)
