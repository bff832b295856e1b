"""Static vs persistent megakernel on every paper layer, and the static build's calibration runs re-measured.

    python docs/results/persistent_mode/persistent.py --gpu h200 --out DIR

Per layer (the GPU's partition table, the paper's default mapping): the fused time in each scheduling
mode (CUDA events, median of `reps` over rotated inputs, each timing includes the control-word reset),
whether the outputs are bitwise equal, and the persistent grid. Then `measure_runs` of the calibration
(the static build, 13 mappings per layer), so the profile fitted on the previous build can be checked
against this one.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from megasim.app.calibrate.gpu_runs import measure_runs
from megasim.app.catalog import layer_names, load_layer, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import WinogradVariant
from megasim.contract.scheduling import MODES
from megasim.gpu.backend import measurement_header, require_cupy
from megasim.gpu.megakernel import FusedConv, Workspace
from megasim.gpu.timing import rotation_inputs, time_launches


def compare_modes(cp, gpu: str, name: str, reps: int) -> dict:
    layer = load_layer(name)
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer, gpu))
    mapping = make(graph, "paper")
    xs, wts, ys = rotation_inputs(cp, layer, 7)
    ws = Workspace(graph)
    row, outputs = {"layer": name, "num_tasks": graph.num_tasks}, {}
    for mode in MODES:
        conv = FusedConv(graph, mapping, workspace=ws, mode=mode)
        y = cp.full_like(ys[0], cp.nan)
        conv.run(xs[0], wts[0], y)
        outputs[mode] = y
        stats = time_launches(cp, lambda i: conv.launch(xs[i], wts[i], ys[i]), len(xs), reps)
        conv.check()
        row[mode] = {"median_us": stats["median_us"], "grid": conv.grid}
    row["bitwise_equal"] = bool((outputs["static"] == outputs["persistent"]).all())
    row["nan_count"] = int(cp.isnan(outputs["persistent"]).sum())
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h200")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent))
    args = p.parse_args(argv)
    cp = require_cupy()
    out = Path(args.out)
    rows = []
    for name in layer_names()[:13]:
        rows.append(compare_modes(cp, args.gpu, name, args.reps))
        r = rows[-1]
        print(f"{name:10} static {r['static']['median_us']:9.1f}  persistent {r['persistent']['median_us']:9.1f} "
              f"(grid {r['persistent']['grid']})  bitwise {r['bitwise_equal']}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    header = {**measurement_header(), "gpu": args.gpu, "reps": args.reps, "mapping": "paper defaults"}
    (out / f"modes_{args.gpu}.json").write_text(json.dumps({"header": header, "layers": rows}, indent=1))
    runs, _ = measure_runs(args.gpu, reps=args.reps)
    (out / f"runs_{args.gpu}.json").write_text(json.dumps({"header": {**header, **runs.pop("header_extra")},
                                                           **runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
