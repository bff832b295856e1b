"""Launch each case's megakernel and its four non-fused kernels once, for Nsight Compute to measure (ncu_writes.sh).

    python docs/results/ncu_fused/launch.py OUT [GPU]     # on the device, under ncu (ncu_writes.sh; GPU h200)

Writes `cases.json` in OUT: per case, the order its kernels were launched in and, from the task graph, the bytes
each stage writes and reads (what the simulator charges), for `analyse_writes.py` to set against ncu's DRAM
counters. `case_row` is shared with `launch_fused.py`.
"""
import json
import sys
from pathlib import Path

CASES = [("VGG-1", {}), ("ResNet-1", {}), ("ResNet-1", {"dig": 128}), ("YOLOv3-1", {}),
         ("gen-n32c24h100w100k32-f4", {}), ("gen-n2c192h127w127k3-f4", {}), ("gen-n64c256h17w17k24-f4", {})]


def layer_of(name, gpu: str = "h200"):
    from megasim.app.calibrate.corpus import generate
    from megasim.app.catalog import load_layer
    if not name.startswith("gen-"):
        return load_layer(name), 4
    shape = {s.layer.name: s for s in generate(150, gpu)}[name]
    return shape.layer, shape.variant


def per_op(graph, values) -> dict:
    """{task type: the sum of a per-task column over that type's tasks}, as `cases.json` records blocks and bytes."""
    from megasim.contract.problem import OP_NAMES, Op
    return {OP_NAMES[o]: int(values[graph.op == o].sum()) for o in Op}


def case_row(name: str, graph, **extra) -> dict:
    """A `cases.json` row of the later Nsight Compute calls (the transforms' and the megakernels', launch_fused.py): the
    case, its partition, `extra`, and per task type its blocks and the bytes it reads and writes."""
    from dataclasses import asdict
    read, written = graph.bytes_per_task()
    return {"case": name, "partition": asdict(graph.partition), **extra, "blocks": per_op(graph, graph.op >= 0),
            "written_bytes": per_op(graph, written), "read_bytes": per_op(graph, read)}


def main(out: Path, gpu: str = "h200") -> int:
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs
    cp = require_cupy()
    rows = []
    for name, params in CASES:
        layer, m = layer_of(name, gpu)
        graph = build_graph(layer, WinogradVariant(m), partition_for(layer, gpu))
        mapping = make(graph, "paper", **params)
        ws = Workspace(graph)
        fused, nonfused = FusedConv(graph, mapping, workspace=ws), NonFusedConv(graph, workspace=ws)
        xs, wts, ys = rotation_inputs(cp, layer, 11, nsets=1)
        fused.launch(xs[0], wts[0], ys[0])
        nonfused.launch(xs[0], wts[0], ys[0])
        cp.cuda.Device().synchronize()
        fused.check()
        read, written = graph.bytes_per_task()
        rows.append({"case": name + "".join(f"-{k}{v}" for k, v in params.items()), "blocks": int(graph.num_tasks),
                     "written_bytes": per_op(graph, written), "read_bytes": per_op(graph, read)})
        print(f"{rows[-1]['case']}: launched", flush=True)
    (out / "cases.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *sys.argv[2:3]))
