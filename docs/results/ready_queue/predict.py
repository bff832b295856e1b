"""The simulator's prediction of the three scheduling modes on the 13 paper layers (calibrated H200 profile,
H200 partitions, F(4x4)), made before the ready-queue kernel existed:
`python docs/results/ready_queue/predict.py` writes `predictions_h200.json`.

Two mappings per layer: the paper default, and the same order reversed. A reversed order deadlocks a
static or persistent launch (children take every slot and spin on parents that cannot start); the ready
queue treats the order as a priority, so it must run it, and the model says how much the priority costs.
"""
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from megasim.contract.scheduling import MODES


def one(name):
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.errors import DeadlockError
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.engine import fused_kernels, run_kernels
    from megasim.contract.mapping import Mapping
    gpu, _ = gpu_for_simulation("h200", False)
    layer = load_layer(name)
    g = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
    paper = make(g, "paper")
    rev = Mapping(paper.order[::-1].copy(), "reversed", {})
    row = {"layer": layer.name}
    for tag, mp in (("paper", paper), ("reversed", rev)):
        for mode in MODES:
            try:
                t = gpu.cycles_to_us(run_kernels(g, fused_kernels(g, mp, mode), gpu).total_cycles)
            except DeadlockError:
                t = None
            row[f"{tag}_{mode}_us"] = t
    return row


if __name__ == "__main__":
    from megasim.app.catalog import layer_names
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(one, layer_names()[:13]))
    json.dump(rows, open(Path(__file__).resolve().parent / "predictions_h200.json", "w"), indent=1)
    for r in rows:
        s, p, q = (r[f"paper_{m}_us"] for m in MODES)
        rq = r["reversed_ready_queue_us"]
        print(f"{r['layer']:10} static {s:8.1f} persistent {p:8.1f} ({s / p - 1:+.1%}) ready_queue {q:8.1f} "
              f"({s / q - 1:+.1%})  reversed: static {r['reversed_static_us']} ready_queue {rq:.1f}")
