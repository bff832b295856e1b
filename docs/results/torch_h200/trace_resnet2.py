"""The measured per-block timelines of ResNet-2 (fused and non-fused) and `megasim compare` on them.

    python docs/results/torch_h200/trace_resnet2.py OUT

What `megasim bench --layer ResNet-2 --trace OUT/trace_resnet2.json` writes, without bench's timing of
every mode, variant and baseline first: the layer's partition from the table, the paper's default
mapping, static mode (the calibration trace's run), rotated inputs. Then `megasim compare` on the file,
for the fused and the non-fused launch: OUT/compare_{fused,nonfused}.png and .txt.
"""
import subprocess
import sys
from pathlib import Path

from megasim.app.bench_trace import trace_layer
from megasim.app.catalog import load_layer, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import WinogradVariant
from megasim.gpu.backend import require_cupy
from megasim.gpu.megakernel import Workspace
from megasim.gpu.timing import rotation_inputs


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    cp = require_cupy()
    layer = load_layer("ResNet-2")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
    path = trace_layer(out / "trace_resnet2.json", graph, make(graph, "paper"), "static", Workspace(graph),
                       rotation_inputs(cp, layer, 7))
    print(f"wrote {path}", flush=True)
    for launch in ("fused", "nonfused"):
        done = subprocess.run([sys.executable, "-m", "megasim.app.cli", "compare", str(path), "--launch", launch,
                               "--plot", str(out / f"compare_{launch}.png")], capture_output=True, text=True)
        (out / f"compare_{launch}.txt").write_text(done.stdout + done.stderr)
        print(done.stdout + done.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
