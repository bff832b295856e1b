"""Stage 4: the warp-tiled GEMM body's laws, from the builds `bench` measured whole (`<gpu>_builds.json`).

The per-block trace sample that gives each generic GEMM body its law (`trace_law.gemm_body_laws`) ran the
generic body only. The warp body (`gpu/kernels/gemm_warp.cuh`) runs the same channel ring and register
block with another lane layout, so its law is taken as the generic body's of the same register block with
two factors fitted on the builds' times: its FP32 efficiency over the generic body's, and its latencies
(the serial step and the fixed cycles) over the generic body's. The GEMM kernel's law is fitted on the
non-fused warp builds, the megakernel's on the fused static F(4) and F(6) ones, each on the training
layers of up to 40,000 tasks only; the held-out layers, the persistent and F(2) builds and the largest
layers judge them.
"""
from __future__ import annotations

import math

import numpy as np

from megasim.app.calibrate.builds import log_error, training_rows
from megasim.contract.problem import Layer, Partition
from megasim.contract.resources import gemm_body

BOUNDS = ((0.5, 2.0), (0.2, 3.0))  # (efficiency factor, latency factor)
EVALS = 24


def generic_twin(body: str) -> str:
    """The generic body with the warp body's threads and register block: "w128-8x8" -> "t128-8x8"."""
    return "t" + body[1:]


def scaled(law: dict, eff: float, lat: float) -> dict:
    return {"compute_efficiency": round(min(1.0, law["compute_efficiency"] * eff), 4),
            "step_cycles": round(law["step_cycles"] * lat, 1), "block_fixed_cycles": round(law["block_fixed_cycles"] * lat, 1)}


def _body_of(row: dict) -> str:
    return gemm_body(Layer(**row["layer"]), Partition(**row["partition"]), row["gemm"])


def _with_laws(spec, kind: str, laws: dict):
    bodies = spec.model.law("gemm_constants")
    tables = {"nonfused": dict(bodies.nonfused), "fused": dict(bodies.fused)}
    tables[kind].update(laws)
    return spec.with_model(gemm_body_laws=tables)


def fit_body(rows: list[dict], spec, body: str, kind: str, pool=None, evals: int = EVALS) -> tuple[dict, float]:
    """The law of warp body `body` for `kind` ("nonfused": the GEMM kernel, "fused": the megakernel's GEMM
    blocks), fitted on `rows` (training builds of that body and launch); returns (law, rms log error)."""
    from scipy.optimize import minimize
    bodies = spec.model.law("gemm_constants")
    source = (bodies.for_megakernel() if kind == "fused" else bodies).nonfused
    twin = source[generic_twin(body)]

    def error(x):
        eff, lat = (float(np.clip(v, lo, hi)) for v, (lo, hi) in zip(np.exp(x), BOUNDS))
        return log_error(rows, _with_laws(spec, kind, {body: scaled(twin, eff, lat)}), pool)

    start = np.log([[1.1, 1.0], [1.4, 1.0], [1.1, 0.7]])  # a simplex wide enough along both factors
    best = minimize(error, x0=start[0], method="Nelder-Mead",
                    options={"maxfev": evals, "xatol": 0.01, "fatol": 1e-5, "initial_simplex": start})
    eff, lat = (float(np.clip(v, lo, hi)) for v, (lo, hi) in zip(np.exp(best.x), BOUNDS))
    return scaled(twin, eff, lat), math.sqrt(best.fun)


def fit_warp_laws(rows: list[dict], spec, pool=None, log=print) -> tuple[dict, dict]:
    """({"gemm_body_laws": its tables with each warp body's laws added, fitted on the training builds}, each
    fit's rms log error by "<body>_<kind>"); ({}, {}) with no builds or a model without GEMM body laws."""
    if not rows or spec.model.law("gemm_constants") is None:
        return {}, {}
    train = training_rows(rows, gemm="warp", mode="static")
    bodies = spec.model.law("gemm_constants")
    tables = {"nonfused": dict(bodies.nonfused), "fused": dict(bodies.fused)}
    errors = {}
    for body in sorted({_body_of(r) for r in train}):
        for kind in ("nonfused", "fused"):
            mine = [r for r in train if _body_of(r) == body and r["launch"] == kind]
            if not mine:
                continue
            law, err = fit_body(mine, _with_laws(spec, "nonfused", tables["nonfused"]), body, kind, pool)
            tables[kind][body], errors[f"{body}_{kind}"] = law, round(err, 4)
            log(f"stage 4 ({body}, {kind}, {len(mine)} builds): {law}, rms log error {err:.3f}")
    return {"gemm_body_laws": tables}, errors
