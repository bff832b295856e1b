"""`--validate-top K`: measure the K best predicted mappings and the paper default on this GPU.

Each candidate goes through `app.bench.bench_layer` (the same timing method
as `megasim bench`: CUDA events, warm-up, median of >= 20 calls, rotated
inputs, a correctness check) with its own variant, partition and mapping
options, and its measured time is its own scheduling mode's. Bench's runs of
the other variants are skipped: another variant is another candidate.
Regret is how much slower the simulator's pick measured than the fastest
candidate measured: measured(pick) / min(measured) - 1.
"""
from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

from megasim.contract import ranking
from megasim.io.writing import write_then_rename
from megasim.contract.errors import MegasimError


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


def bench_args(strategy: str, options: dict, variant: int, reps: int) -> Namespace:
    """The argparse-like namespace `megasim bench` reads a mapping choice from (`--opt` for the options)."""
    return Namespace(strategy=strategy, mapping=None, partition=None, reps=reps, variant=variant,
                     opt=[f"{k}={v}" for k, v in options.items()], seed=options.get("seed"))


def measure(problem, space, point: dict, reps: int, bandwidth: float) -> dict:
    """One candidate on the GPU: its mode's fused median time, non-fused (graph) time of its variant, and
    the correctness check of that fused run."""
    from megasim.app.bench import bench_layer
    from megasim.app.bench_best import TOLERANCE, timing_key
    problem, part, opts = problem.at(space, point)
    m = problem.variant.m
    entry = bench_layer(problem.layer, bench_args(space.strategy, opts, m, reps), bandwidth,
                        partition=part, baselines=False, raw_blockidx=False, variants=False)
    t, key = entry["timings"], timing_key(problem.mode, m, m)
    return {"measured_fused_us": t[key]["median_us"], "measured_fused_p10_us": t[key]["p10_us"],
            "measured_fused_p90_us": t[key]["p90_us"],
            "measured_nonfused_graph_us": t["nonfused-graph"]["median_us"],
            "rel_err": entry["checks"][key]["rel_err"],
            "within_tolerance": entry["checks"][key]["rel_err"] <= TOLERANCE[m]}


def regret(rows: list[dict]) -> float | None:
    """measured(first row, the simulator's pick) / fastest measured - 1."""
    times = [r["measured_fused_us"] for r in rows if r.get("measured_fused_us")]
    if not times or not rows[0].get("measured_fused_us"):
        return None
    return ranking.regret(rows[0]["measured_fused_us"], times)


def validate_top(problem, space, top: list[dict], reference: dict | None, out: Path, reps: int = 20) -> dict:
    """Measure `top` (ranked rows) plus the paper default; write validation.json; return the document."""
    cp = require_gpu()
    from megasim.gpu.backend import measurement_header
    from megasim.app.bench import copy_bandwidth
    bw = copy_bandwidth(cp)
    names = [p.name for p in space.params]
    candidates = [{"label": f"predicted #{r['rank']}", "point": {n: r[n] for n in names},
                   "predicted_fused_us": r["fused_us"]} for r in top]
    if reference and reference.get("rejected") is None:
        ref_point = {n: reference["point"][n] for n in names}
        if all(c["point"] != ref_point for c in candidates):
            candidates.append({"label": "paper default", "point": ref_point,
                               "predicted_fused_us": reference.get("fused_us")})
    for c in candidates:
        c.update(measure(problem, space, c["point"], reps, bw))
        cp.get_default_memory_pool().free_all_blocks()
    ranked = [c for c in candidates if c["label"] != "paper default"]
    doc = {"header": {**measurement_header(), "reps": reps},
           "layer": problem.layer.name, "candidates": candidates, "regret": regret(ranked + [
               c for c in candidates if c["label"] == "paper default"]),
           "regret_definition": "measured(simulator's pick) / fastest measured candidate - 1"}
    with write_then_rename(out / "validation.json") as tmp:
        tmp.write_text(json.dumps(doc, indent=1))
    return doc


def format_validation(doc: dict) -> str:
    lines = [f"{'candidate':15} {'variant/mode':>16} {'predicted us':>12} {'measured us':>12} {'rel err':>8}"]
    for c in doc["candidates"]:
        setting = f"F{c['point']['variant']}/{c['point']['mode']}"
        lines.append(f"{c['label']:15} {setting:>16} {c['predicted_fused_us'] or float('nan'):12.1f} "
                     f"{c['measured_fused_us'] or float('nan'):12.1f} {c['rel_err']:8.1e}")
    r = doc["regret"]
    lines.append("regret of the simulator's pick: " + ("n/a" if r is None else f"{100 * r:.1f}%"))
    return "\n".join(lines)
