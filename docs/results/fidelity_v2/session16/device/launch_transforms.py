"""Launch the non-fused input and output kernels of eight shapes once each, for Nsight Compute (ncu_transforms.sh).

    python launch_transforms.py OUT        # on the device, under ncu

The shapes are those whose non-fused output kernel the model gets most wrong, in both directions, and four paper
layers (docs/calibration-analysis.md, session 16): whole-K blocks predicted too slow, ragged K and few-block F(6)
predicted too fast. Writes `cases.json` in OUT: per case its blocks, threads and the bytes each kernel reads and
writes according to the task graph.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "write_traffic_h200"))
from launch import case_row, layer_of  # noqa: E402

CASES = ["ResNet-1", "ResNet-2", "VGG-3", "DenseNet", "gen-n32c128h128w128k32-f4", "gen-n16c256h100w100k100-f4",
         "gen-n64c256h17w57k32-f6", "gen-n16c96h256w256k16-f6"]


def main(out: Path) -> int:
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs
    cp = require_cupy()
    rows = []
    for name in CASES:
        layer, m = layer_of(name)
        graph = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
        nonfused = NonFusedConv(graph, workspace=Workspace(graph))
        xs, wts, ys = rotation_inputs(cp, layer, 11, nsets=1)
        nonfused.launch(xs[0], wts[0], ys[0])
        cp.cuda.Device().synchronize()
        rows.append(case_row(name, graph))
        print(f"{name}: launched", flush=True)
    (out / "cases.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
