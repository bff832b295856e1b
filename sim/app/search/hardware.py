"""`--validate-top K`: measure the search's K best builds beside every build of the layer, on this GPU.

The search ranks builds by the model; the model can be wrong where the search goes (a search is drawn
to whatever the model makes look fast). So the K best predicted builds are measured together with the
layer's whole discrete space (`contract.build.discrete_builds`: every launch, variant, mode and GEMM body
at the layer's own partition and the strategy's default mapping, the FP32 set `bench` sweeps), each on the
same inputs by `bench_build.time_builds` (their kernels compiled first, in parallel). Regret is how much
slower the search's pick measured than the fastest accurate build measured: measured(pick) / fastest - 1,
against the whole space, not against one default. The measured fastest is what the loop keeps: best.json is rewritten to name it, with its
prediction and its measurement, so the file a user runs is the one the hardware chose.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from megasim.app.bench_build import Candidate, fastest, format_rows, time_builds
from megasim.contract import ranking
from megasim.contract.build import Build
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.problem import WinogradVariant
from megasim.io.writing import write_then_rename


def require_gpu():
    """CuPy and at least one device, or a one-line MegasimError."""
    from megasim.gpu.backend import require_cupy
    cp = require_cupy()
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001  (a driver without a device raises its own error types)
        count = 0
    if count < 1:
        raise MegasimError("--validate-top needs an NVIDIA GPU; CuPy finds none")
    return cp


def candidates(problem, space, top: list[dict]) -> list[Candidate]:
    """The K best distinct rows as builds, labelled #1 to #K (the search's pick first of all), then every discrete build
    of the layer at its own partition with the strategy's default mapping, each with its prediction;
    a build already listed is not listed twice."""
    from megasim.app.pick import rank_builds
    out, seen = [], set()

    def add(c: Candidate):
        key = (c.build, c.options)
        if key not in seen:
            seen.add(key)
            out.append(c)

    for i, r in enumerate(top, 1):
        chosen, part, opts = problem.at(space, {p.name: r[p.name] for p in space.params})
        b = chosen.build
        add(Candidate(Build(b.launch, b.variant, b.mode, b.gemm, part), space.strategy,
                      tuple(sorted(opts.items())) if b.launch == "fused" else (), r["time_us"],
                      f"predicted #{i}: {b.label}"))
    defaults = dict(space.default_mapping)
    mapping_for = _default_mapping(space.strategy, defaults)
    for ranked in rank_builds(problem.layer, space.base_partition, problem.gpu, mapping_for, problem.policy):
        b = ranked.build
        opts = tuple(sorted(defaults.items())) if b.launch == "fused" else ()
        add(Candidate(b, space.strategy, opts, ranked.time_us, b.label))
    return out


def _default_mapping(strategy: str, defaults: dict):
    from megasim.contract.mapping import make
    return lambda graph: make(graph, strategy, **defaults)


def summarise(rows: list[dict]) -> dict:
    """Regret of the search's pick (the first row) against the fastest accurate build, and its
    prediction error."""
    best = fastest(rows)
    pick = rows[0]
    times = [r["measured_us"] for r in rows if r.get("accurate") and r.get("measured_us")]
    regret = (ranking.regret(pick["measured_us"], times)
              if pick.get("accurate") and pick.get("measured_us") and times else None)
    return {"pick": pick["label"], "pick_measured_us": pick.get("measured_us"),
            "pick_prediction_error": pick.get("prediction_error"), "fastest": best and best["label"],
            "fastest_measured_us": best and best["measured_us"], "regret": regret,
            "regret_definition": "measured(search's pick) / fastest accurate measured build - 1"}


def validate_top(problem, space, top: list[dict], out: Path, reps: int = 20, header_extra: dict | None = None) -> dict:
    """Measure the candidates, write validation.json, and rewrite best.json to name the fastest measured
    build; return the document."""
    require_gpu()
    from megasim.gpu.backend import measurement_header
    cands = candidates(problem, space, top)
    rows = time_builds(problem.layer, cands, reps, workers=min(16, os.cpu_count() or 1))
    doc = {"header": {**measurement_header(), "reps": reps}, "layer": problem.layer.name,
           "candidates": rows, **summarise(rows)}
    with write_then_rename(out / "validation.json") as tmp:
        tmp.write_text(json.dumps(doc, indent=1, default=str))
    best = fastest(rows)
    if best is not None:
        chosen = cands[rows.index(best)]
        doc["best_json"] = str(write_measured_best(problem, chosen, best, out, header_extra or {}))
    return doc


def write_measured_best(problem, chosen: Candidate, row: dict, out: Path, extra: dict) -> Path:
    """best.json naming the fastest measured build, its prediction and its measurement beside it."""
    from megasim.app.search.outputs import bench_command
    from megasim.contract.mapping.io import save_mapping
    b = chosen.build
    graph = build_graph(problem.layer, WinogradVariant(b.variant), b.partition)
    path = out / "best.json"
    doc = {"search": {**extra, "predicted_us": chosen.predicted_us, "label": b.label,
                      "bench_command": bench_command(path)},
           "measured": {"us": row["measured_us"], "rel_err": row["rel_err"],
                        "chosen_by": "the fastest accurate build --validate-top measured"}}
    return save_mapping(path, graph, chosen.mapping(graph), doc, mode=b.mode, launch=b.launch, gemm=b.gemm,
                        precision=b.precision)


def format_validation(doc: dict) -> str:
    lines = [format_rows(doc["candidates"])]
    r = doc["regret"]
    lines.append(f"search's pick: {doc['pick']}; fastest measured: {doc['fastest']} "
                 f"({doc['fastest_measured_us'] or float('nan'):.1f} us)")
    perr = doc.get("pick_prediction_error")
    lines.append("regret of the search's pick: " + ("n/a" if r is None else f"{100 * r:.1f}%")
                 + ("" if perr is None else f"; its prediction error {perr:+.1%}"))
    if doc.get("best_json"):
        lines.append(f"best.json now names the fastest measured build: {doc['best_json']}")
    return "\n".join(lines)
