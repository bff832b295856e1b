"""Stage 2's kernel times measured on the GPU at hand: each non-fused kernel timed inside a CUDA graph,
`<gpu>_kernel_graph_times.jsonl`.

Stage 2 fits each task type on the non-fused kernels' times. Timed by events between eager launches, small
shapes measure Python's launch rate rather than the kernel (the four kernels' event times summed to 1.13x the
graph-captured total on the corpus, and none timed below 3.6 us), so each shape's kernels are timed as graph
prefixes (`NonFusedConv.stage_times_graphed`), beside the eager times, the graph total and an empty graph's time.
The shapes are the 13 paper layers and the 150 corpus shapes; kernels compile first in worker processes. One
JSON line per shape is appended as soon as it is done, and a rerun skips the shapes already there, so a run
stopped by its budget or killed continues where it stopped.
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path

REPS = 30


def shapes(gpu: str, corpus: int = 150) -> list:
    from megasim.app.calibrate.corpus import CorpusShape, generate
    from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
    from megasim.app.catalog import layer_names, load_layer
    paper = [CorpusShape(load_layer(n), 4, "heldout" if load_layer(n).name in HELDOUT_LAYERS else "train")
             for n in layer_names()[:13]]
    return paper + list(generate(corpus, gpu))


def graph_of(shape, gpu: str):
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import WinogradVariant
    return build_graph(shape.layer, WinogradVariant(shape.variant), partition_for(shape.layer, gpu))


def _compile(job) -> str:
    from megasim.gpu.backend import KernelConfig, module
    shape, gpu = job
    module(KernelConfig.of(graph_of(shape, gpu)))
    return shape.layer.name


def measure_shape(cp, shape, gpu: str) -> dict:
    from megasim.app.calibrate.gpu_runs import nonfused_reference
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.timing import rotation_inputs
    graph = graph_of(shape, gpu)
    xs, wts, ys = rotation_inputs(cp, shape.layer, 7)
    nf, _, nf_t, eager = nonfused_reference(cp, graph, Workspace(graph), xs, wts, ys, REPS)
    graphed = nf.stage_times_graphed(xs, wts, ys, REPS)
    return {"shape": shape.layer.name, "split": shape.split, "layer": asdict(shape.layer),
            "variant": shape.variant, "partition": graph.partition.to_dict(), "reps": REPS,
            "rotation_sets": len(xs), "graph_us": nf_t["median_us"], "eager_kernels_us": eager,
            "graph_prefix_us": graphed["prefix_us"], "graph_kernels_us": graphed["kernels_us"],
            "empty_graph_us": graphed["floor_us"]}


def measure_kernel_graph_times(gpu: str, raw_dir, budget_s: float = 300.0, workers: int | None = None,
                               corpus: int = 150, log=print) -> dict:
    """Append the shapes not yet in `<raw_dir>/<gpu>_kernel_graph_times.jsonl` until `budget_s` runs out; returns
    the counts done and left."""
    from megasim.app.calibrate.corpus_runs import done_shapes
    from megasim.gpu.backend import measurement_header, require_cupy
    out = Path(raw_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{gpu}_kernel_graph_times.jsonl"
    done = done_shapes(path)
    todo = [s for s in shapes(gpu, corpus) if s.layer.name not in done]
    if not todo:
        return {"done": len(done), "left": 0}
    t0 = time.perf_counter()
    workers = workers or min(16, os.cpu_count() or 1)
    if workers > 1 and todo:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            list(pool.map(_compile, [(s, gpu) for s in todo]))
    cp = require_cupy()
    (out / f"{gpu}_kernel_graph_times_header.json").write_text(json.dumps(measurement_header(), indent=1))
    finished = 0
    with path.open("a") as f:
        for shape in todo:
            if time.perf_counter() - t0 > budget_s:
                break
            f.write(json.dumps(measure_shape(cp, shape, gpu)) + "\n")
            f.flush()
            finished += 1
            cp.get_default_memory_pool().free_all_blocks()
    log(f"[kernel graph] {finished} shapes in {time.perf_counter() - t0:.0f} s, {len(todo) - finished} left")
    return {"done": len(done) + finished, "left": len(todo) - finished}


__all__ = ["measure_kernel_graph_times", "measure_shape", "shapes", "REPS"]
