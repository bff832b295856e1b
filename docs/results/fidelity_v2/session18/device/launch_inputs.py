"""Launch input kernels k blocks to an SM, and two whole ones, once each, for Nsight Compute (ncu_inputs.sh).

    python launch_inputs.py OUT        # on the device, under ncu

Which resource sets an input block's time beside its own kind (session 18, item 5): the launches of
input_per_sm.py at k = 1 and at the largest k, and the whole input kernels of VGG-2 and of a large corpus shape
the model predicts 25% fast. Writes `cases.json` in OUT: per launch, in order, its case, k (0: the whole kernel),
blocks and the bytes its tasks read and write according to the task graph.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "write_traffic_h200"))
from launch import layer_of  # noqa: E402

LAUNCHES = [("VGG-2", 1), ("VGG-2", 2), ("VGG-2", 5), ("VGG-2", 0), ("DenseNet", 1), ("DenseNet", 6),
            ("gen-n16c96h256w256k16-f6", 1), ("gen-n16c96h256w256k16-f6", 5), ("gen-n256c100h30w56k3-f2", 1),
            ("gen-n256c100h30w56k3-f2", 13), ("gen-n32c128h128w128k32-f4", 0)]


def main(out: Path) -> int:
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import Op, WinogradVariant
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs
    cp = require_cupy()
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = []
    for name, k in LAUNCHES:
        layer, m = layer_of(name)
        graph = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
        nf = NonFusedConv(graph, workspace=Workspace(graph))
        tasks = graph.tasks_of(Op.INPUT_TRANSFORM)
        blocks = k * sms if k else len(tasks)
        xs, _, _ = rotation_inputs(cp, layer, 18, nsets=1)
        nf.module.function("ms_input_kernel")((blocks,), (graph.partition.threads,), (xs[0], nf.ws.V))
        cp.cuda.Device().synchronize()
        read, written = graph.bytes_per_task()
        rows.append({"case": name, "k": k, "blocks": int(blocks), "read_bytes": int(read[tasks[:blocks]].sum()),
                     "written_bytes": int(written[tasks[:blocks]].sum())})
        print(f"{name} k={k}: launched {blocks} blocks", flush=True)
    (out / "cases.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
