"""What the simulator predicted for the warp-tiled GEMM before it went into the kernels.

    python docs/results/gemm_v2_h200/predict.py

The model has one GEMM efficiency per GPU (fitted, 0.549 on the H200). The GEMM study measured the new
body alone at 1.35-1.46x the old one on ResNet-2/3/4 and VGG-2 (geomean 1.42), so the prediction scales
that efficiency by 1.42 and simulates every paper layer at its new partition (static mode, paper default
mapping): fused and non-fused, beside the old profile at the old partition. Writes `predictions_h200.json`.
"""
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

SPEEDUP = 1.42
OLD_K = {"ResNet-3": 64, "VGG-1": 64, "VGG-2": 64, "VGG-3": 64, "YOLOv3-2": 64, "YOLOv3-3": 64, "YOLOv3-4": 64}


def one(name):
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.engine.simulate import simulate
    gpu, _ = gpu_for_simulation("h200", False)
    eff = dict(gpu.compute_efficiency)
    eff["gemm"] = min(1.0, eff["gemm"] * SPEEDUP)
    fast = gpu.with_model(compute_efficiency=eff)
    layer = load_layer(name)
    new = partition_for(layer, "h200")
    old = replace(new, gemm_k_per_task=OLD_K.get(layer.name, new.gemm_k_per_task))
    row = {"layer": layer.name}
    for tag, spec, part in (("before", gpu, old), ("after", fast, new)):
        g = build_graph(layer, WinogradVariant(4), part)
        r = simulate(g, make(g, "paper"), spec)
        row[f"{tag}_fused_us"], row[f"{tag}_nonfused_us"] = r.fused.time_us, r.nonfused.time_us
    return row


if __name__ == "__main__":
    from megasim.app.catalog import layer_names
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(one, layer_names()[:13]))
    json.dump(rows, open(Path(__file__).resolve().parent / "predictions_h200.json", "w"), indent=1)
    for r in rows:
        print(f"{r['layer']:9} fused {r['before_fused_us']:8.1f} -> {r['after_fused_us']:8.1f} "
              f"({r['before_fused_us'] / r['after_fused_us']:.2f}x)  non-fused {r['before_nonfused_us']:8.1f} -> "
              f"{r['after_nonfused_us']:8.1f} ({r['before_nonfused_us'] / r['after_nonfused_us']:.2f}x)")
