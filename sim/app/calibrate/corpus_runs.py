"""Measuring the generated corpus on the GPU, one shape at a time, resumable.

Each shape (`corpus.generate`) gets its non-fused time (graph-captured, and each kernel inside the
pipeline) and fused times of two mappings (the paper default and a random topological order) in the static
and persistent modes. One JSON line per shape is appended to the output as soon as the shape is done, so an
interrupted run loses at most one shape, and a rerun skips every shape already in the file. Rows are the
calibration's run records (`gpu_runs.run_record`) plus the mode.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from megasim.app.calibrate.corpus import CorpusShape, generate
from megasim.app.calibrate.gpu_runs import DEFAULT_PARAMS, nonfused_reference, run_record
from megasim.contract.errors import MegasimError
from megasim.io.files import read_text

CORPUS_MODES = ("static", "persistent")
CORPUS_MAPPINGS = (("paper", DEFAULT_PARAMS), ("random_topo", {"seed": 1}))


def done_shapes(path: Path) -> set[str]:
    """Names of the shapes a previous run finished (a torn last line from an interruption is ignored)."""
    if not path.exists():
        return set()
    names = set()
    for line in read_text(path).splitlines():
        try:
            names.add(json.loads(line)["shape"])
        except (ValueError, KeyError, TypeError):
            continue
    return names


def measure_shape(cp, shape: CorpusShape, gpu: str, reps: int,
                  mappings=CORPUS_MAPPINGS, modes=CORPUS_MODES) -> dict:
    """Every run of one shape, as one JSON-able line. A mapping the shape cannot take (parameters its
    partition rules out) is listed under "skipped" with the reason, and the rest are measured."""
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make, validate
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.timing import rotation_inputs, time_launches
    layer, part = shape.layer, partition_for(shape.layer, gpu)
    graph = build_graph(layer, WinogradVariant(shape.variant), part)
    xs, wts, ys = rotation_inputs(cp, layer, 7)
    ws = Workspace(graph)
    _, y_ref, nf_t, kernels = nonfused_reference(cp, graph, ws, xs, wts, ys, reps)
    nf_us = nf_t["median_us"]
    runs, mismatches, skipped = [], [], []
    for strategy, params in mappings:
        try:
            mp = make(graph, strategy, **params)
            validate(graph, mp)
        except MegasimError as exc:
            skipped.append(f"{strategy} {params}: {exc}")
            continue
        for mode in modes:
            fused = FusedConv(graph, mp, workspace=ws, mode=mode)
            y = cp.full_like(ys[0], cp.nan)
            fused.run(xs[0], wts[0], y)
            if not bool((y == y_ref).all()):
                mismatches.append(f"{strategy} {mode}")
            t = time_launches(cp, lambda i: fused.launch(xs[i], wts[i], ys[i]), len(xs), reps)
            fused.check()
            row = run_record(layer, shape.variant, part, strategy, params, shape.split, t, nf_us, kernels)
            runs.append({**row, "mode": mode})
    line = {"shape": layer.name, "split": shape.split, "runs": runs, "mismatches": mismatches}
    return {**line, "skipped": skipped} if skipped else line


def measure_corpus(gpu: str, path, count: int = 150, reps: int = 20, budget_s: float = 500.0, measure=None) -> dict:
    """Measure every corpus shape not yet in `path` (JSON lines), within `budget_s`; returns counts.

    `measure(shape)` is injectable for tests; by default it times the shape on this machine's GPU.
    """
    if count < 1 or budget_s <= 0:
        raise MegasimError(f"--corpus needs a positive count and budget, got {count} shapes and {budget_s} s")
    path = Path(path)
    shapes = generate(count, gpu)
    todo = [s for s in shapes if s.layer.name not in done_shapes(path)]
    if measure is None and todo:
        from megasim.gpu.backend import require_cupy
        cp = require_cupy()
        measure = lambda s: measure_shape(cp, s, gpu, reps)  # noqa: E731
    t0, failed, measured = time.perf_counter(), [], 0
    path.parent.mkdir(parents=True, exist_ok=True)
    torn = path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n")
    with Progress(console=Console(stderr=True), transient=True) as bar, path.open("a") as out:
        if torn:
            out.write("\n")  # an interrupted line stays alone and is skipped on reading
        task = bar.add_task(f"corpus on {gpu}", total=len(todo))
        for shape in todo:
            if time.perf_counter() - t0 > budget_s:
                break
            try:
                line = measure(shape)
            except MegasimError as exc:
                failed.append(f"{shape.layer.name}: {exc}")
                line = {"shape": shape.layer.name, "split": shape.split, "runs": [], "error": str(exc)}
            out.write(json.dumps(line) + "\n")
            out.flush()
            measured += 1
            bar.advance(task)
    return {"shapes": len(shapes), "already": len(shapes) - len(todo), "measured": measured,
            "left": len(todo) - measured, "failed": failed}
