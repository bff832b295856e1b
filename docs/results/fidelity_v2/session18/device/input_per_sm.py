"""How an input transform block's time grows with the input blocks beside it on its SM (session 18, item 2).

    python input_per_sm.py OUT        # on the device (kind nvidia-h200)

For each case the non-fused input kernel is launched with its first k x SMs tasks only (k = 1 .. its occupancy by the contract's rule, which matches the driver's),
so that one wave puts k blocks on every SM. Per k: the kernel timed by CUDA events (median of 60, inputs rotated
past L2), and one run of its trace build, giving each block's SM and its start and end. Writes `input_per_sm.json`
in OUT and prints a table.
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "write_traffic_h200"))
from launch import layer_of  # noqa: E402

CASES = ["VGG-2", "DenseNet", "ResNet-1", "gen-n16c96h256w256k16-f6", "gen-n128c192h64w64k16-f6",
         "gen-n256c100h30w56k3-f2"]


def measure(cp, name: str) -> dict:
    from megasim.app.catalog import load_gpu, partition_for
    from megasim.contract.resources import Flavor, blocks_per_sm, stage_resources
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import Op, WinogradVariant
    from megasim.gpu.backend import TRACE_ONLY, module
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs, rotation_set_count, time_launches
    layer, m = layer_of(name)
    graph = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
    nf = NonFusedConv(graph, workspace=Workspace(graph))
    ws, g, threads = nf.ws, graph.geometry, (graph.partition.threads,)
    fn = nf.module.function("ms_input_kernel")
    tr = module(nf.module.config, TRACE_ONLY).function("ms_input_kernel_trace")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    slots = blocks_per_sm(load_gpu("h200"), stage_resources(graph.partition, Op.INPUT_TRANSFORM,
                                                              flavor=Flavor.of_graph(graph)))
    tasks = g.n_g * g.s_i
    nsets = rotation_set_count(cp, layer, 2.0, 8)
    xs, wts, ys = rotation_inputs(cp, layer, 18, nsets=nsets)
    first = np.int32(g.first_task(Op.INPUT_TRANSFORM))
    rows = []
    for k in range(1, min(slots, tasks // sms) + 1):
        blocks = k * sms
        timed = time_launches(cp, lambda i: fn((blocks,), threads, (xs[i], ws.V)), nsets, 60)
        buf = cp.zeros((graph.num_tasks, 4), dtype=cp.uint64)
        tr((blocks,), threads, (xs[0], ws.V, buf, first))
        cp.cuda.Device().synchronize()
        raw = buf.get()
        raw = raw[raw[:, 3] > 0]
        sm = (raw[:, 0] >> 32).astype(int)
        start, end = raw[:, 1].astype(np.float64) / 1e3, raw[:, 3].astype(np.float64) / 1e3
        per_sm = np.bincount(sm, minlength=sms)
        rows.append({"k": k, "blocks": blocks, "kernel_us": timed, "traced_blocks": int(len(raw)),
                     "block_us_median": float(np.median(end - start)), "block_us_p10": float(np.percentile(end - start, 10)),
                     "block_us_p90": float(np.percentile(end - start, 90)),
                     "span_us": float(end.max() - start.min()), "start_spread_us": float(np.percentile(start - start.min(), 90)),
                     "blocks_per_sm": [int(per_sm.min()), int(per_sm.max())]})
    return {"case": name, "variant": m, "tasks": int(tasks), "slots": int(slots), "threads": graph.partition.threads,
            "rows": rows}


def main(out: Path) -> int:
    from megasim.gpu.backend import require_cupy
    cp = require_cupy()
    results = []
    for name in CASES:
        results.append(measure(cp, name))
        (out / "input_per_sm.json").write_text(json.dumps(results, indent=1))
        r = results[-1]
        print(f"{name} F({r['variant']}) slots {r['slots']} tasks {r['tasks']}", flush=True)
        for row in r["rows"]:
            print(f"  k {row['k']}: kernel {row['kernel_us']['median_us']:7.2f} us, block median "
                  f"{row['block_us_median']:7.2f} (p10 {row['block_us_p10']:.2f}, p90 {row['block_us_p90']:.2f}), "
                  f"per SM {row['blocks_per_sm']}, starts within {row['start_spread_us']:.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
