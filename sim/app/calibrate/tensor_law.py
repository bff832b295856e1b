"""Stage 5: the `tensor_core_gemm` law's constants, from the 3xTF32 GEMM body measured beside the FFMA one
(`<gpu>_tensor_core.json`, written by `megasim calibrate`, its part `tensor_core`: `tensor_core_runs`).

The law's rate constants are measured apart (mma.sync's rate and the clock under tensor load are its
defaults); what only the built body shows is the share of that rate it reaches, against the FFMA body's share
of the FP32 rate, and how much of the FFMA body's per-block latency it keeps. The law says how a 3xTF32 build
relates to its FP32 twin, so it is fitted on that relation: the predicted gain over the FP32 twin (each under the
fitted FP32 model) against the measured one, least mean |log gain error|, which leaves the FP32 model's own error
out of the law. `efficiency_ratio` and `latency_ratio` together on the GEMM kernels (a grid of pairs, `PAIRS`, then
each refined in hundredths around the best with the other fixed), then, with them fixed,
`fused_efficiency_ratio` (the megakernel's GEMM tasks') on the fused convolutions (`COARSE`, then hundredths).
The constants are fitted on the training layers' F(4x4) builds (`FIT_VARIANT`): the H200's whole refit takes 5.0
minutes on a 2-core machine so, 7.8 fitted on all three variants. Their F(2x2) and F(6x6) builds and every
held-out build judge them.
Fitted on the times instead, the two GEMM constants traded the layers whose 3xTF32 build loses a block an SM
against the rest, and the held-out gains agreed on 2 of 9 (docs/decisions.md). The fit is deterministic and
needs only a few simulations a value, so it runs with the profile's. The layers the calibration runs hold out
(`gpu_runs.HELDOUT_LAYERS`) are held out here too, and judge the law on all three launches. Without the file a
GPU gets no law, so a search on it stays FP32 (decisions.md, "Precision is an axis of the decision space that a
search opens only where the model predicts it").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

from megasim.app.calibrate.measurements import Micros
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Dimension
from megasim.contract.resources import PRECISIONS
from megasim.io.files import read_json
from megasim.io.schema import Str, Text, one_of, parse

LAW = "tensor_core_gemm"
KINDS = {"gemm": "gemm_us", "nonfused": "nonfused_us", "fused": "fused_us"}  # launch -> the measured field
COARSE = tuple(round(0.30 + 0.05 * i, 2) for i in range(15))
FINE = tuple(0.01 * i for i in range(-4, 5))
FIT_VARIANT = 4  # the variant the constants are fitted on, where the file has it; the others are judged
PAIRS = tuple((e, r) for e in (0.6, 0.7, 0.8, 0.9, 1.0) for r in (0.6, 0.7, 0.8, 0.9, 1.0))  # (efficiency, latency)
WITHIN = 0.05  # a predicted gain over FP32 "agrees" within 5 points of the measured one
WHAT = ("a JSON object with \"rows\": [...], one per layer with its layer, variant, partition and the fp32 and "
        "3xtf32 gemm_us, nonfused_us and fused_us, as `megasim calibrate` writes it (`tensor_core_runs`)")


@dataclass(kw_only=True)
class _Times:
    __pydantic_config__ = {"extra": "allow"}
    gemm_us: Micros
    nonfused_us: Micros
    fused_us: Micros


@dataclass(kw_only=True)
class _Row:
    __pydantic_config__ = {"extra": "allow"}
    layer: Annotated[str, Str(min_length=1)]
    variant: one_of((2, 4, 6))
    partition: dict[Text, Dimension]
    fp32: _Times


def load_tensor_core(path) -> list[dict]:
    """The rows of a `<gpu>_tensor_core.json`, each checked (its times, and a 3xTF32 build of its layer and
    partition that the kernels compile), with its split ("train" or "heldout"): one MegasimError naming the file
    and the field, before any simulating."""
    from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
    from megasim.app.catalog import load_layer
    from megasim.contract.problem import Partition
    from megasim.contract.resources import check_kernel_build
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list) or not doc["rows"]:
        raise MegasimError(f"{path}: not a 3xTF32 measurement ({WHAT})")
    rows = []
    for i, row in enumerate(doc["rows"]):
        where = f"{path}: rows[{i}]"
        parse(_Row, row, where)
        if "3xtf32" not in row:
            raise MegasimError(f"{where}: 3xtf32 is missing")
        parse(_Times, row["3xtf32"], where, ("3xtf32",))
        try:
            layer = load_layer(row["layer"])
            check_kernel_build(layer, Partition.from_dict(row["partition"]), "warp", precision="3xtf32")
        except MegasimError as exc:
            raise MegasimError(f"{where}: {exc}") from None
        rows.append({**row, "split": "heldout" if layer.name in HELDOUT_LAYERS else "train"})
    splits = {r["split"] for r in rows}
    if splits != {"train", "heldout"}:
        raise MegasimError(f"{path}: every row is {'held out' if 'heldout' in splits else 'a training row'}; the "
                           f"law is fitted on some layers and judged on others ({', '.join(HELDOUT_LAYERS)})")
    return rows


@lru_cache(maxsize=32)
def _graph(layer: str, variant: int, partition: tuple):
    from megasim.app.catalog import load_layer
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import Partition, WinogradVariant
    return build_graph(load_layer(layer), WinogradVariant(variant), Partition.from_dict(dict(partition)))


def _predict(job) -> float:
    from megasim.contract.interpreter import RunConfig
    from megasim.contract.mapping import make
    from megasim.engine.interpreter import SimpyInterpreter
    spec, row, precision, kind = job
    graph = _graph(row["layer"], row["variant"], tuple(sorted(row["partition"].items())))
    mapping = make(graph, "paper") if kind == "fused" else None
    return SimpyInterpreter(spec, gemm="warp", precision=precision).run(graph, mapping, RunConfig(kind)).time_us


def _times(rows: list[dict], spec, cases, pool) -> list[list[float]]:
    """Per row, the predicted time of each (precision, kind) of `cases` under `spec`."""
    jobs = [(spec, {k: r[k] for k in ("layer", "variant", "partition")}, p, k) for r in rows for p, k in cases]
    flat = list(pool.map(_predict, jobs) if pool is not None else map(_predict, jobs))
    return [flat[i:i + len(cases)] for i in range(0, len(flat), len(cases))]


def with_law(spec, efficiency: float, fused: float = 0.0, latency: float = 1.0, rates: dict | None = None):
    """`spec` with the law at these constants (0 fused: the GEMM kernel's efficiency) and the GPU's measured
    `rates` (`tensor_rates`; the law's declared defaults where None), after any laws it has."""
    names = [x.name for x in spec.model.laws if x.name != LAW] + [LAW]
    return spec.with_model(laws=names, **{LAW: {**(rates or {}), "efficiency_ratio": efficiency,
                                                "fused_efficiency_ratio": fused, "latency_ratio": latency}})


def tensor_rates(micro: dict, path) -> dict:
    """The law's rate constants measured on this GPU (`<gpu>_micro.json`): mma.sync's TF32 FLOP per cycle per SM,
    and the SM clock it keeps under tensor load over the clock under FFMA load (the FFMA run just before it, else
    the file's fp32 section). One MegasimError naming the
    missing section and the command that measures it."""
    mma, fp32 = micro.get("mma_tf32") or {}, micro.get("fp32") or {}
    rate, mma_mhz = mma.get("flop_per_cycle_per_sm"), mma.get("sm_clock_mhz")
    fp32_mhz = mma.get("fp32_sm_clock_mhz") or fp32.get("sm_clock_mhz")  # the FFMA clock of the same run first
    if not (rate and mma_mhz and fp32_mhz):
        raise MegasimError(f"{path}: the 3xTF32 law needs the tensor cores' measured rate (section mma_tf32, with "
                           "fp32's sm_clock_mhz), which this file lacks; on the GPU, `megasim calibrate --gpu NAME "
                           "--raw DIR` adds it to the raw folder")
    return {"tf32_flop_per_cycle_per_sm": round(float(rate), 2),
            "tensor_clock_ratio": round(float(mma_mhz) / float(fp32_mhz), 4)}


def gain_error(predicted_3xtf32: float, predicted_fp32: float, row: dict, kind: str) -> float:
    """|log| of the predicted gain over FP32 against the measured one, as ratios of times."""
    key = KINDS[kind]
    return abs(math.log(predicted_fp32 / predicted_3xtf32) - math.log(row["fp32"][key] / row["3xtf32"][key]))


def fitter(rows: list[dict], kind: str, spec, spec_for, pool=None):
    """The mean |log gain error| of `kind` over `rows` as a function of the constants `spec_for(*values)` sets,
    remembered per value (the FP32 twins' times, under `spec`, are simulated once)."""
    fp32 = [t[0] for t in _times(rows, spec, [("fp32", kind)], pool)]
    seen = {}

    def error(*values) -> float:
        if values not in seen:
            times = _times(rows, spec_for(*values), [("3xtf32", kind)], pool)
            seen[values] = sum(gain_error(t[0], f, r, kind) for t, f, r in zip(times, fp32, rows)) / len(rows)
        return seen[values]
    return error


def refine(error, best: tuple, i: int) -> tuple:
    """`best` with its i-th value the best of the hundredths within 0.04 of it."""
    return min((best[:i] + (round(best[i] + d, 2),) + best[i + 1:] for d in FINE), key=lambda v: error(*v))


def judge(rows: list[dict], fp32_spec, spec, pool=None) -> list[dict]:
    """Each row with, per launch, the 3xTF32 time `spec` predicts and the measured one, and the gain over FP32
    predicted (FP32 under `fp32_spec`) and measured."""
    cases = [(p, k) for p in PRECISIONS for k in KINDS]
    fp32 = _times(rows, fp32_spec, cases[:3], pool)
    tc = _times(rows, spec, cases[3:], pool)
    out = []
    for r, f, t in zip(rows, fp32, tc):
        row = {"layer": r["layer"], "variant": r["variant"], "split": r["split"]}
        for (kind, key), pf, pt in zip(KINDS.items(), f, t):
            predicted, measured = pf / pt - 1, r["fp32"][key] / r["3xtf32"][key] - 1
            row[kind] = {"predicted_3xtf32_us": pt, "measured_3xtf32_us": r["3xtf32"][key],
                         "predicted_gain": predicted, "measured_gain": measured,
                         "within_5_points": abs(predicted - measured) <= WITHIN}
        out.append(row)
    return out


def summary(judged: list[dict], split: str) -> dict:
    """Per launch, over the rows of `split`: the 3xTF32 times' MAPE and mean |log error|, and on how many rows
    the predicted gain over FP32 agrees with the measured one."""
    mine = [r for r in judged if r["split"] == split]
    out = {}
    for kind in KINDS:
        ratios = [r[kind]["predicted_3xtf32_us"] / r[kind]["measured_3xtf32_us"] for r in mine]
        out[kind] = {"mape": sum(abs(x - 1) for x in ratios) / len(ratios),
                     "mean_abs_log_error": sum(abs(math.log(x)) for x in ratios) / len(ratios),
                     "gain_agrees": sum(r[kind]["within_5_points"] for r in mine), "rows": len(mine)}
    return out


def fit_tensor_law(rows: list[dict], spec, pool=None, log=print, rates: dict | None = None
                   ) -> tuple[dict, dict, list[dict]]:
    """({"laws": the model's laws and the law, the law: its measured `rates` and three fitted constants}, the
    errors [fit] records, the judged rows) of checked rows (`load_tensor_core`) over the fitted FP32 model
    `spec`."""
    train = [r for r in rows if r["split"] == "train"]
    train = [r for r in train if r["variant"] == FIT_VARIANT] or train
    gemm = fitter(train, "gemm", spec, lambda e, r: with_law(spec, e, latency=r, rates=rates), pool)
    eff, latency = refine(gemm, refine(gemm, min(PAIRS, key=lambda v: gemm(*v)), 0), 1)
    eff_err = gemm(eff, latency)
    fused_of = fitter(train, "fused", spec, lambda v: with_law(spec, eff, v, latency, rates), pool)
    (fused,) = refine(fused_of, (min(COARSE, key=fused_of),), 0)
    fused_err = fused_of(fused)
    judged = judge(rows, spec, with_law(spec, eff, fused, latency, rates), pool)
    held = summary(judged, "heldout")
    names = sorted({r["layer"] for r in rows if r["split"] == "heldout"})
    log(f"stage 5 (3xTF32 GEMM, {len(train)} builds): efficiency_ratio {eff}, latency_ratio {latency}, "
        f"fused_efficiency_ratio {fused}, mean |log gain error| {eff_err:.3f}, {fused_err:.3f}; held out ({', '.join(names)}): 3xTF32 time MAPE "
        + ", ".join(f"{k} {100 * s['mape']:.1f}%" for k, s in held.items()) + "; gain over FP32 within 5 points on "
        + ", ".join(f"{k} {s['gain_agrees']} of {s['rows']}" for k, s in held.items()))
    errors = {"gemm_gain": round(eff_err, 4), "fused_gain": round(fused_err, 4),
              **{f"heldout_{k}": round(s["mean_abs_log_error"], 4) for k, s in held.items()}}
    model = {"laws": [x.name for x in spec.model.laws if x.name != LAW] + [LAW],
             LAW: {**(rates or {}), "efficiency_ratio": eff, "fused_efficiency_ratio": fused,
                   "latency_ratio": latency}}
    return model, errors, judged


def tensor_stage(rows: list[dict], spec, pool=None, log=print, rates: dict | None = None) -> tuple[dict, dict]:
    """What stage 5 adds to the profile: ([model] entries, [fit] entries); both empty without rows (the raw
    folder has no `<gpu>_tensor_core.json`): no law."""
    if not rows:
        return {}, {}
    model, errors, _ = fit_tensor_law(rows, spec, pool, log, rates)
    return model, {"stage5_mean_abs_log_error": errors}


__all__ = ["LAW", "fit_tensor_law", "load_tensor_core", "summary", "tensor_rates", "tensor_stage", "with_law"]
