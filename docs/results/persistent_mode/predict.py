"""The simulator's prediction of static vs persistent on the 13 paper layers (calibrated H200 profile,
paper default mapping), for several values of block_launch_cycles: `python docs/results/persistent_mode/predict.py`."""
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

BLS = (0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0)


def one(name):
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.engine import fused_kernels, run_kernels
    gpu, _ = gpu_for_simulation("h200", False)
    layer = load_layer(name)
    g = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
    mp = make(g, "paper")
    row = {"layer": layer.name, "static_us": gpu.cycles_to_us(run_kernels(g, fused_kernels(g, mp), gpu).total_cycles)}
    for bl in BLS:
        spec = replace(gpu, block_launch_cycles=bl)
        row[str(int(bl))] = gpu.cycles_to_us(run_kernels(g, fused_kernels(g, mp, "persistent"), spec).total_cycles)
    return row
if __name__ == "__main__":
    from megasim.app.catalog import layer_names
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(one, layer_names()[:13]))
    json.dump(rows, open(Path(__file__).resolve().parent / "predictions_h200.json", "w"), indent=1)
