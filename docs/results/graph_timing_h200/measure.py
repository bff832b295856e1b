"""Each non-fused kernel timed inside a CUDA graph, on the 13 paper layers and the 150 corpus shapes.

    python docs/results/graph_timing_h200/measure.py OUT [GPU] [WORKERS] [BUDGET_S]

Stage 2 of the calibration fits each task type on the non-fused kernels' times. Those came from events
recorded between eager launches, and on small shapes Python issues a launch more slowly than the GPU runs
the kernel before it: the four kernels' event times summed to 1.13x the graph-captured total on the corpus,
and none timed below 3.6 us. Here each shape's kernels are timed as graph prefixes
(`NonFusedConv.stage_times_graphed`), beside the eager event times, the graph total and the time of a graph
holding one empty kernel. One JSON line per shape is appended to OUT/<gpu>_kernel_graph_times.jsonl as soon
as it is done; a rerun skips the shapes already there. Kernels compile first in WORKERS processes.
"""
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPS = 30


def shapes(gpu):
    from megasim.app.calibrate.corpus import CorpusShape, generate
    from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
    from megasim.app.catalog import layer_names, load_layer
    paper = [CorpusShape(load_layer(n), 4, "heldout" if load_layer(n).name in HELDOUT_LAYERS else "train")
             for n in layer_names()]
    return paper + list(generate(150, gpu))


def graph_of(shape, gpu):
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import WinogradVariant
    return build_graph(shape.layer, WinogradVariant(shape.variant), partition_for(shape.layer, gpu))


def compile_one(job):
    from megasim.gpu.backend import KernelConfig, module
    shape, gpu = job
    module(KernelConfig.of(graph_of(shape, gpu)))
    return shape.layer.name


def measure(cp, shape, gpu) -> dict:
    from dataclasses import asdict
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


def main(out: Path, gpu: str, workers: int, budget_s: float) -> None:
    from megasim.app.calibrate.corpus_runs import done_shapes
    from megasim.gpu.backend import measurement_header, require_cupy
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{gpu}_kernel_graph_times.jsonl"
    todo = [s for s in shapes(gpu) if s.layer.name not in done_shapes(path)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(compile_one, [(s, gpu) for s in todo]))
    print(f"[compile] {len(todo)} shapes in {time.perf_counter() - t0:.0f} s", flush=True)
    cp = require_cupy()
    (out / f"{gpu}_kernel_graph_times_header.json").write_text(json.dumps(measurement_header(), indent=1))
    with path.open("a") as f:
        for i, shape in enumerate(todo):
            if time.perf_counter() - t0 > budget_s:
                print(f"[budget] stopped with {len(todo) - i} shapes left", flush=True)
                break
            row = measure(cp, shape, gpu)
            f.write(json.dumps(row) + "\n")
            f.flush()
            if i % 10 == 0:
                print(f"[{i + 1}/{len(todo)}] {row['shape']}: graph {row['graph_us']:.1f} us, graphed kernels "
                      f"{[round(v, 1) for v in row['graph_kernels_us']]}, eager "
                      f"{[round(v, 1) for v in row['eager_kernels_us']]}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    print(f"[done] {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(Path(a[0]), a[1] if len(a) > 1 else "h200", int(a[2]) if len(a) > 2 else 15,
         float(a[3]) if len(a) > 3 else 300.0)
