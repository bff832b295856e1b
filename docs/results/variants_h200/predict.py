"""The simulator's fused prediction per Winograd variant and scheduling mode on the 13 paper layers
(calibrated H200 profile, each layer's H200 partition, the paper's default mapping), recorded before the
variants were measured: `python docs/results/variants_h200/predict.py` writes predictions_h200.json."""
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def one(name):
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.contract.scheduling import MODES
    from megasim.engine import fused_kernels, nonfused_kernels, run_kernels
    gpu, _ = gpu_for_simulation("h200", False)
    layer = load_layer(name)
    row = {"layer": layer.name}
    for m in (2, 4, 6):
        g = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
        mp = make(g, "paper")
        for mode in MODES:
            row[f"{mode}-f{m}"] = gpu.cycles_to_us(run_kernels(g, fused_kernels(g, mp, mode), gpu).total_cycles)
        if m == 4:
            row["nonfused-f4"] = gpu.cycles_to_us(run_kernels(g, nonfused_kernels(g), gpu).total_cycles)
    return row


if __name__ == "__main__":
    from megasim.app.catalog import layer_names
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(one, layer_names()[:13]))
    (Path(__file__).resolve().parent / "predictions_h200.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        print(r["layer"], {k: round(v, 1) for k, v in r.items() if k != "layer"})
