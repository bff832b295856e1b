"""Stage 4's input measured on the GPU at hand: every build of the paper layers' decision space, `<gpu>_builds.json`.

Each paper layer's discrete builds (`contract.build.discrete_builds`: every launch, variant, mode, GEMM body and
precision at its partition-table partition and the paper's default mapping) are compiled in parallel and timed by
`bench_build.time_builds` (bench's method), a layer at a time; the file is rewritten after each layer, so a run
stopped by its budget or killed continues where it stopped. Rows whose output held a NaN are left out; the
layers the calibration runs hold out (`gpu_runs.HELDOUT_LAYERS`) are marked so.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path

from megasim.contract.build import with_partition, discrete_builds
from megasim.contract.resources import PRECISIONS


def _rows(layer, rows: list[dict], heldout, defaults: dict) -> list[dict]:
    split = "heldout" if layer.name in heldout else "train"
    return [{"layer": asdict(layer), "partition": r["partition"], "strategy": r["strategy"],
             "params": r["options"] or defaults, "launch": r["launch"],
             "variant": r["variant"], "mode": r["mode"], "gemm": r["gemm"], "precision": r.get("precision", "fp32"),
             "us": round(r["measured_us"], 3),
             "split": split}
            for r in rows if r.get("measured_us") and not r.get("nan_count")]


def measure_builds(gpu: str, path, reps: int = 20, layers=None, budget_s: float = 600.0, log=print) -> dict:
    """Time the builds of each paper layer not yet in `path` (by name), until `budget_s` runs out; returns the
    counts done and left."""
    import json

    from megasim.app.bench_build import Candidate, time_builds
    from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
    from megasim.app.catalog import layer_names, load_layer, partition_for
    from megasim.contract.mapping import MAPPINGS
    from megasim.contract.options import declared
    from megasim.gpu.backend import measurement_header
    from megasim.io.files import read_json
    from megasim.io.writing import write_then_rename
    path = Path(path)
    doc = read_json(path) if path.exists() else {"header": {**measurement_header(), "reps": reps,
                                                           "source": "megasim calibrate (builds_runs)"}, "builds": []}
    done = {row["layer"]["name"] for row in doc["builds"]}
    defaults = tuple(sorted((o.name, o.default) for o in declared(MAPPINGS.get("paper").options)))
    names = [load_layer(n).name for n in (layers or layer_names()[:13])]
    todo = [n for n in names if n not in done]
    t0, finished = time.perf_counter(), 0
    for name in todo:
        if time.perf_counter() - t0 > budget_s:
            break
        layer = load_layer(name)
        own = partition_for(layer, gpu)
        cands = [Candidate(with_partition(b, layer, own), "paper", defaults if b.launch == "fused" else ())
                 for b in discrete_builds(layer, own, PRECISIONS)]
        rows = time_builds(layer, cands, reps, workers=min(16, os.cpu_count() or 1))
        doc["builds"] += _rows(layer, rows, HELDOUT_LAYERS, dict(defaults))
        with write_then_rename(path) as tmp:
            tmp.write_text(json.dumps(doc, indent=0) + "\n")
        finished += 1
        log(f"[builds] {name}: {len(rows)} builds in {time.perf_counter() - t0:.0f} s")
    return {"done": len(done) + finished, "left": len(todo) - finished}


__all__ = ["measure_builds"]
