"""The device's input blocks k to an SM (device/input_per_sm.json) beside the model's, under one or more profiles.

Each case's input kernel, cut to its first k x 132 tasks, is simulated alone; per k the median block time (start to
end) and the kernel's span, against the traced median block and the event-timed kernel. The slope per extra block
is what an input block shares of its SM with its own kind.

    python input_per_sm.py PROFILE [PROFILE...] [--queued S] [--l2-cap JSON]
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "write_traffic_h200"))
from launch import layer_of  # noqa: E402

from megasim.app.calibrate.profile import load_profile  # noqa: E402
from megasim.app.catalog import load_gpu, partition_for  # noqa: E402
from megasim.contract.graph import build_graph  # noqa: E402
from megasim.contract.problem import Op, WinogradVariant  # noqa: E402
from megasim.contract.resources import Flavor, stage_resources  # noqa: E402
from megasim.engine import Kernel, run_kernels  # noqa: E402

HERE = Path(__file__).parent
args = sys.argv[1:]
sys.path.insert(0, str(HERE))
import options  # noqa: E402

options.take_all(args)
measured = json.loads((HERE / "device" / "input_per_sm.json").read_text())
specs = [load_profile(p).apply(load_gpu("h200")) for p in args]


def simulate(graph, k: int, spec) -> tuple[float, float]:
    tasks = graph.tasks_of(Op.INPUT_TRANSFORM)[: k * spec.sm_count]
    kern = Kernel(tasks, stage_resources(graph.partition, Op.INPUT_TRANSFORM, flavor=Flavor.of_graph(graph)), False,
                  "input_transform")
    r = run_kernels(graph, [kern], spec).records
    return float(np.median(r["end_us"] - r["start_us"])), float(r["end_us"].max() - r["start_us"].min())


def slope(ks, ts) -> float:
    return float(np.polyfit(ks, ts, 1)[0])


print("case | k | traced block us | " + " | ".join(f"model {j}" for j in range(len(specs))))
for case in measured:
    layer, m = layer_of(case["case"])
    graph = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
    rows = [r for r in case["rows"] if r["blocks_per_sm"][0] == r["blocks_per_sm"][1] == r["k"]]
    ks = [r["k"] for r in rows]
    traced = [r["block_us_median"] for r in rows]
    sims = [[simulate(graph, k, s)[0] for k in ks] for s in specs]
    for i, k in enumerate(ks):
        print(f"{case['case'][:26]:26s} F({m}) | {k} | {traced[i]:7.2f} | " + " | ".join(f"{s[i]:7.2f}" for s in sims))
    line = f"  slope per extra block: traced {slope(ks, traced):6.2f} us ({slope(ks, traced) / traced[0]:.2f} of alone)"
    for s in sims:
        line += f"; model {slope(ks, s):6.2f} us ({slope(ks, s) / s[0]:.2f} of alone)"
    print(line)
