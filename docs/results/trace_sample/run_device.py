"""Per-block hardware timelines of a sample of shapes, mappings and scheduling modes (fidelity issue, item 1).

    python docs/results/trace_sample/run_device.py OUT      # on the device (carry .whl)

For each case: the fused megakernel timed untraced (CUDA events, median of 20 rotated runs), then one traced
launch of it and one of the four non-fused kernels (`bench_trace.trace_layer`, after warm launches). Each
trace is a gzipped measured trace that `megasim compare` reads. The paper layers run under the paper's
default mapping; ResNet-1 also under D_IG = 0, 128 and 196; four layers also in the persistent and
ready-queue modes; twelve *training* corpus shapes (never held-out ones) under the default mapping. The
traces are packed into tar files of at most 15 MB (the device returns 8 files), beside `summary.json`.
"""
import gzip
import json
import sys
import tarfile
import time
from pathlib import Path

PAPER = ["ResNet-1", "ResNet-2", "ResNet-3", "ResNet-4", "VGG-1", "VGG-2", "VGG-3", "YOLOv3-1", "YOLOv3-2",
         "YOLOv3-3", "YOLOv3-4", "YOLOv3-5", "DenseNet"]
MODES = {"ResNet-1": ("persistent", "ready_queue"), "ResNet-2": ("persistent", "ready_queue"),
         "ResNet-4": ("persistent", "ready_queue"), "YOLOv3-1": ("persistent", "ready_queue")}
RESNET1_DIG = (0, 128, 196)
CORPUS = ["gen-n1c16h128w128k384-f4", "gen-n256c3h17w17k192-f4", "gen-n1c640h112w112k48-f4",
          "gen-n4c640h7w7k640-f4", "gen-n8c1024h30w30k32-f4", "gen-n256c100h30w56k3-f2",
          "gen-n16c96h256w256k16-f6", "gen-n32c16h112w112k16-f6", "gen-n2c384h56w56k256-f2",
          "gen-n64c160h28w28k768-f6", "gen-n16c320h56w56k384-f4", "gen-n4c512h17w17k32-f4"]


def cases():
    from megasim.app.calibrate.corpus import generate
    from megasim.app.catalog import load_layer
    for name in PAPER:
        yield name, load_layer(name), 4, {}, "static"
        for mode in MODES.get(name, ()):
            yield f"{name}-{mode}", load_layer(name), 4, {}, mode
    for dig in RESNET1_DIG:
        yield f"ResNet-1-dig{dig}", load_layer("ResNet-1"), 4, {"dig": dig}, "static"
    shapes = {s.layer.name: s for s in generate(150, "h200")}
    for name in CORPUS:
        assert shapes[name].split == "train", name
        yield name, shapes[name].layer, shapes[name].variant, {}, "static"


def main(out: Path) -> int:
    from megasim.app.bench_trace import trace_layer
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.timing import rotation_inputs, time_launches
    cp = require_cupy()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    summary, files = [], []
    all_cases = list(cases())
    for i, (name, layer, m, params, mode) in enumerate(all_cases):
        t0 = time.time()
        graph = build_graph(layer, WinogradVariant(m), partition_for(layer, "h200"))
        mapping = make(graph, "paper", **params)
        inputs = rotation_inputs(cp, layer, 7)
        ws = Workspace(graph)
        fused = FusedConv(graph, mapping, workspace=ws, mode=mode)
        xs, wts, ys = inputs
        t = time_launches(cp, lambda j: fused.launch(xs[j], wts[j], ys[j]), len(xs), 20)
        fused.check()
        path = trace_layer(work / f"{name}.json", graph, mapping, mode, ws, inputs)
        gz = path.with_suffix(".json.gz")
        gz.write_bytes(gzip.compress(path.read_bytes(), 6))
        path.unlink()
        files.append(gz)
        row = {"case": name, "layer": layer.name, "variant": m, "params": dict(mapping.params), "mode": mode,
               "blocks": int(graph.num_tasks), "fused_untraced_us": t["median_us"], "p10_us": t["p10_us"],
               "p90_us": t["p90_us"], "file": gz.name}
        summary.append(row)
        print(f"[{i + 1}/{len(all_cases)}] {name} {mode} {t['median_us']:.1f} us ({time.time() - t0:.1f} s)", flush=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    pack, size, k = None, 0, 0
    for f in files:
        if pack is None or size + f.stat().st_size > 15e6:
            if pack:
                pack.close()
            k += 1
            pack, size = tarfile.open(out / f"traces_{k}.tar", "w"), 0
        pack.add(f, arcname=f.name)
        size += f.stat().st_size
    pack.close()
    for f in files:
        f.unlink()
    work.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
