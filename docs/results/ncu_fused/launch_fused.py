"""Launch the megakernel of ten traced cases once each (static mode, the paper's default mapping, as the trace
sample has them), for Nsight Compute (ncu_fused.sh).

    python launch_fused.py OUT [GPU]        # on the device, under ncu; GPU names the tuned partitions (h200)

The cases are the paper layers whose fused input blocks the model gets most wrong, both ways (under the
profile of 2026-11-27): wide layers whose fused input blocks it makes too slow, deep ones it makes too
fast. A warm launch first (its own ncu row, so that the cold one can be told apart), then the measured one; each
is checked. Writes `cases.json` in OUT: per case, its blocks and the bytes each task type reads and writes
according to the task graph."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch import case_row  # noqa: E402

CASES = ["DenseNet", "VGG-1", "VGG-2", "YOLOv3-1", "ResNet-1", "ResNet-2", "ResNet-3", "ResNet-4", "YOLOv3-4",
         "YOLOv3-5"]


def main(out: Path, gpu: str = "h200") -> int:
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.timing import rotation_inputs
    cp = require_cupy()
    rows = []
    for name in CASES:
        layer = load_layer(name)
        graph = build_graph(layer, WinogradVariant(4), partition_for(layer, gpu))
        mapping = make(graph, "paper")
        fused = FusedConv(graph, mapping, workspace=Workspace(graph))
        xs, wts, ys = rotation_inputs(cp, layer, 11, nsets=1)
        for _ in range(2):
            fused.launch(xs[0], wts[0], ys[0])
            cp.cuda.Device().synchronize()
            fused.check()
        rows.append(case_row(name, graph, params=dict(mapping.params)))
        print(f"{name}: launched twice", flush=True)
    (out / "cases.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *sys.argv[2:]))
