"""The corpus again, under the mappings and scheduling modes a search actually picks (fidelity issue, item 1).

    python docs/results/corpus_modes_h200/measure.py OUT [COUNT] [WORKERS] [GPU]

The first corpus (`../corpus_h200/`) timed two mappings, the paper default and a random topological order,
in the static and persistent modes. The torch benchmark (`../torch_h200/`) then showed the searched
schedules, mostly the ready queue with small D_IG/D_GO and M = 1, measured 1.1-1.4x slower than predicted.
This run times every corpus shape under four mappings (paper 512/512/4, paper 64/128/1, paper 0/64/1,
random_topo seed 1) in all three modes, beside the non-fused graph (a second measurement of it, which also
says how repeatable the first corpus was). Kernels are compiled first in WORKERS processes into CuPy's
cache; then `measure_corpus` (resumable, one JSON line per shape) writes OUT/<gpu>_corpus_modes.jsonl.
"""
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

MODES = ("static", "persistent", "ready_queue")
MAPPINGS = (("paper", {"dig": 512, "dgo": 512, "m": 4}), ("paper", {"dig": 64, "dgo": 128, "m": 1}),
            ("paper", {"dig": 0, "dgo": 64, "m": 1}), ("random_topo", {"seed": 1}))


def graph_of(shape, gpu):
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import WinogradVariant
    return build_graph(shape.layer, WinogradVariant(shape.variant), partition_for(shape.layer, gpu))


def compile_one(job):
    from megasim.gpu.megakernel import fused_module
    shape, gpu = job
    graph = graph_of(shape, gpu)
    for mode in MODES:
        fused_module(graph, mode)
    return shape.layer.name


def main(out: Path, count: int, workers: int, gpu: str) -> None:
    from megasim.app.calibrate.corpus import generate
    from megasim.app.calibrate.corpus_runs import measure_corpus, measure_shape
    from megasim.gpu.backend import require_cupy
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(compile_one, [(s, gpu) for s in generate(count, gpu)]))
    print(f"[compile] {len(done)} shapes x {len(MODES)} modes in {time.perf_counter() - t0:.0f} s", flush=True)
    cp = require_cupy()
    counts = measure_corpus(gpu, out / f"{gpu}_corpus_modes.jsonl", count, reps=20, budget_s=360,
                            measure=lambda s: measure_shape(cp, s, gpu, 20, MAPPINGS, MODES))
    counts["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(counts))


if __name__ == "__main__":
    args = sys.argv[1:]
    main(Path(args[0]), int(args[1]) if len(args) > 1 else 150, int(args[2]) if len(args) > 2 else 15,
         args[3] if len(args) > 3 else "h200")
