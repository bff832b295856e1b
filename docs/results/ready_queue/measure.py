"""The three scheduling modes on every paper layer, and the ready queue on the reversed order.

    python docs/results/ready_queue/measure.py --gpu h200 --out DIR [--runs]

Per layer (the GPU's partition table, F(4x4)): the fused time of the paper's default mapping in each mode
(CUDA events, median of `reps` over rotated inputs, each timing includes the control-word reset), and the
ready queue on the same order reversed (which times out a static launch). Every output is compared
bitwise with the static one. `--runs` re-measures the calibration runs (static build) for the profiles'
`revalidated_builds`.
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


def _time(cp, conv, xs, wts, ys, reps):
    y = cp.full_like(ys[0], cp.nan)
    conv.run(xs[0], wts[0], y)
    stats = time_launches(cp, lambda i: conv.launch(xs[i], wts[i], ys[i]), len(xs), reps)
    conv.check()
    return y, {"median_us": stats["median_us"], "grid": conv.grid}


def compare_modes(cp, gpu: str, name: str, reps: int) -> dict:
    layer = load_layer(name)
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer, gpu))
    paper = make(graph, "paper").order
    xs, wts, ys = rotation_inputs(cp, layer, 7)
    ws = Workspace(graph)
    row, outputs = {"layer": name, "num_tasks": graph.num_tasks}, {}
    runs = [(mode, mode, paper) for mode in MODES] + [("ready_queue-reversed", "ready_queue", paper[::-1].copy())]
    for key, mode, order in runs:
        outputs[key], row[key] = _time(cp, FusedConv(graph, order, workspace=ws, mode=mode), xs, wts, ys, reps)
    ref = outputs["static"]
    row["bitwise_equal"] = {k: bool((y == ref).all()) for k, y in outputs.items() if k != "static"}
    row["nan_count"] = {k: int(cp.isnan(y).sum()) for k, y in outputs.items()}
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="h200")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent))
    p.add_argument("--runs", action="store_true")
    args = p.parse_args(argv)
    cp = require_cupy()
    out = Path(args.out)
    rows = []
    for name in layer_names()[:13]:
        rows.append(compare_modes(cp, args.gpu, name, args.reps))
        r = rows[-1]
        print(f"{name:10} " + " ".join(f"{k} {r[k]['median_us']:8.1f}" for k in (*MODES, "ready_queue-reversed"))
              + f"  bitwise {all(r['bitwise_equal'].values())}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    header = {**measurement_header(), "gpu": args.gpu, "reps": args.reps, "mapping": "paper defaults"}
    (out / f"modes_{args.gpu}.json").write_text(json.dumps({"header": header, "layers": rows}, indent=1))
    if args.runs:
        runs, _ = measure_runs(args.gpu, reps=args.reps)
        (out / f"runs_{args.gpu}.json").write_text(json.dumps({"header": {**header, **runs.pop("header_extra")},
                                                               **runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
