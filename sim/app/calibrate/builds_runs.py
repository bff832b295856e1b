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


def _rows(layer, rows: list[dict], split: str, defaults: dict) -> list[dict]:
    return [{"layer": asdict(layer), "partition": r["partition"], "strategy": r["strategy"],
             "params": r["options"] or defaults, "launch": r["launch"],
             "variant": r["variant"], "mode": r["mode"], "gemm": r["gemm"], "precision": r["precision"],
             "us": round(r["measured_us"], 3),
             "split": split}
            for r in rows if r.get("measured_us") and not r.get("nan_count")]


def measure_builds(gpu: str, path, reps: int = 20, layers=None, budget_s: float = 600.0, log=print) -> dict:
    """Time the builds of each paper layer not yet in `path` (by name), until `budget_s` runs out; returns the
    counts done and left."""
    from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
    from megasim.app.catalog import layer_names, load_layer
    named = [load_layer(n) for n in (layers or layer_names()[:13])]
    return _measure(gpu, path, reps, [(x, "heldout" if x.name in HELDOUT_LAYERS else "train") for x in named],
                    budget_s, log, "builds_runs")


def measure_corpus_builds(gpu: str, path, reps: int = 20, corpus: int = 32, budget_s: float = 600.0,
                          log=print) -> dict:
    """Every build of the held-out shapes among the first `corpus` generated corpus shapes (`corpus.generate`),
    into `path` as `measure_builds` writes the paper layers': the data that judges the simulator's pick on
    shapes no fit read."""
    from megasim.app.calibrate.corpus import generate
    held = [(s.layer, "heldout") for s in generate(corpus, gpu) if s.split == "heldout"]
    return _measure(gpu, path, reps, held, budget_s, log, "builds_runs, held-out corpus shapes")


def _measure(gpu: str, path, reps: int, layers: list, budget_s: float, log, source: str) -> dict:
    """Each (layer, split) not yet in `path` (by name): its discrete builds timed, the file rewritten after
    each layer."""
    import json

    from megasim.app.bench_build import Candidate, time_builds
    from megasim.app.catalog import partition_for
    from megasim.contract.mapping import MAPPINGS
    from megasim.contract.options import declared
    from megasim.io.files import read_json
    from megasim.io.writing import write_then_rename
    path = Path(path)
    if path.exists():
        doc = read_json(path)
    else:
        from megasim.gpu.backend import measurement_header
        doc = {"header": {**measurement_header(), "reps": reps, "source": f"megasim calibrate ({source})"},
               "builds": []}
    done = {row["layer"]["name"] for row in doc["builds"]} | set(doc["header"].get("no_builds", []))
    defaults = tuple(sorted((o.name, o.default) for o in declared(MAPPINGS.get("paper").options)))
    todo = [(x, split) for x, split in layers if x.name not in done]
    t0, finished = time.perf_counter(), 0
    for layer, split in todo:
        if time.perf_counter() - t0 > budget_s:
            break
        own = partition_for(layer, gpu)
        cands = [Candidate(with_partition(b, layer, own), "paper", defaults if b.launch == "fused" else ())
                 for b in discrete_builds(layer, own, PRECISIONS)]
        rows = _rows(layer, time_builds(layer, cands, reps, workers=min(16, os.cpu_count() or 1)), split,
                     dict(defaults))
        doc["builds"] += rows
        if not rows:  # nothing it could build: remembered, so that a rerun does not time it again
            doc["header"].setdefault("no_builds", []).append(layer.name)
        with write_then_rename(path) as tmp:
            tmp.write_text(json.dumps(doc, indent=0) + "\n")
        finished += 1
        log(f"[builds] {layer.name}: {len(rows)} builds in {time.perf_counter() - t0:.0f} s")
    return {"done": len(done) + finished, "left": len(todo) - finished}


__all__ = ["measure_builds", "measure_corpus_builds"]
