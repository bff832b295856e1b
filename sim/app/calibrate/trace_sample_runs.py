"""The per-block trace sample the block laws are fitted on, measured on the GPU at hand: `<gpu>_trace_sample.npz`.

Per case, one traced launch of the fused megakernel and one of the four non-fused kernels (`bench_trace.trace_layer`,
after warm launches), with the untraced fused time beside them (CUDA events, median of 20 rotated runs). The cases
are the paper layers under the paper's default mapping; ResNet-1 also under D_IG = 0, 128 and 196; four layers
also in the persistent and ready-queue modes; twelve training corpus shapes (never held-out ones). Each trace is
kept gzipped in a work folder as soon as it is measured, so a stopped run continues where it stopped; when every
case is there they are packed into one compact archive: per case and launch, each block's task, SM, op and its
start, ready and end in ticks of %globaltimer's 32 ns, stored as differences so they compress, and the problem
as JSON (`trace_law.load_sample` reads it).
"""
from __future__ import annotations

import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np

PAPER = ("ResNet-1", "ResNet-2", "ResNet-3", "ResNet-4", "VGG-1", "VGG-2", "VGG-3", "YOLOv3-1", "YOLOv3-2",
         "YOLOv3-3", "YOLOv3-4", "YOLOv3-5", "DenseNet")
MODES = {"ResNet-1": ("persistent", "ready_queue"), "ResNet-2": ("persistent", "ready_queue"),
         "ResNet-4": ("persistent", "ready_queue"), "YOLOv3-1": ("persistent", "ready_queue")}
RESNET1_DIG = (0, 128, 196)
CORPUS = ("gen-n1c16h128w128k384-f4", "gen-n256c3h17w17k192-f4", "gen-n1c640h112w112k48-f4",
          "gen-n4c640h7w7k640-f4", "gen-n8c1024h30w30k32-f4", "gen-n256c100h30w56k3-f2",
          "gen-n16c96h256w256k16-f6", "gen-n32c16h112w112k16-f6", "gen-n2c384h56w56k256-f2",
          "gen-n64c160h28w28k768-f6", "gen-n16c320h56w56k384-f4", "gen-n4c512h17w17k32-f4")


def cases(gpu: str):
    """(case, layer, variant, mapping options, mode) of every case, in order."""
    from megasim.app.calibrate.corpus import generate
    from megasim.app.catalog import load_layer
    for name in PAPER:
        yield name, load_layer(name), 4, {}, "static"
        for mode in MODES.get(name, ()):
            yield f"{name}-{mode}", load_layer(name), 4, {}, mode
    for dig in RESNET1_DIG:
        yield f"ResNet-1-dig{dig}", load_layer("ResNet-1"), 4, {"dig": dig}, "static"
    shapes = {s.layer.name: s for s in generate(150, gpu)}
    for name in CORPUS:
        yield name, shapes[name].layer, shapes[name].variant, {}, "static"


def trace_case(cp, work: Path, case, gpu: str) -> dict:
    """One case's two traced launches into `work`/<case>.json.gz; its summary row."""
    from megasim.app.bench_trace import trace_layer
    from megasim.app.catalog import partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.timing import rotation_inputs, time_launches
    name, layer, m, params, mode = case
    graph = build_graph(layer, WinogradVariant(m), partition_for(layer, gpu))
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
    return {"case": name, "layer": layer.name, "variant": m, "params": dict(mapping.params), "mode": mode,
            "blocks": int(graph.num_tasks), "fused_untraced_us": t["median_us"], "p10_us": t["p10_us"],
            "p90_us": t["p90_us"], "file": gz.name}


def write_summary(lines: Path, out: Path) -> None:
    """The cases' untraced times (`summary.jsonl`, the last row of a case wins) as the JSON list the replay
    check reads beside the sample (`raw.load_sample_times`)."""
    from megasim.io.writing import write_then_rename
    rows = {}
    for line in lines.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["case"]] = row
    with write_then_rename(out) as tmp:
        tmp.write_text(json.dumps(list(rows.values()), indent=1) + "\n")


def pack(work: Path, out: Path) -> int:
    """Every `work`/*.json.gz trace into the archive `out`; the number of cases."""
    from megasim.app.calibrate.trace_law import FIELDS, TICK_US
    from megasim.app.measured_trace import read_measured
    from megasim.io.writing import write_then_rename
    arrays, meta = {}, {}
    for f in sorted(work.glob("*.json.gz")):
        case = f.name[:-len(".json.gz")]
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            tmp.write(gzip.decompress(f.read_bytes()))
            tmp.flush()
            info, launches = read_measured(tmp.name)
        meta[case] = {k: v for k, v in info.items() if k != "order"}
        for launch, rec in launches.items():
            ticks = {f: np.round(np.asarray(rec[f], dtype=np.float64) / TICK_US).astype(np.int64)
                     for f in ("start_us", "ready_us", "end_us")}
            deltas = {"start_us": np.diff(ticks["start_us"], prepend=0),
                      "ready_us": ticks["ready_us"] - ticks["start_us"], "end_us": ticks["end_us"] - ticks["ready_us"]}
            for field in FIELDS:
                values = deltas[field] if field in deltas else np.asarray(rec[field])
                arrays[f"{case}/{launch}/{field}"] = values.astype(np.int32)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with write_then_rename(out) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    return len(meta)


def measure_trace_sample(gpu: str, raw_dir, budget_s: float = 400.0, only=None, log=print) -> dict:
    """Trace the cases not yet in `<raw_dir>/<gpu>_trace_sample/` until `budget_s` runs out, and pack the
    archive once every case is there (`only`: a subset of case names, for a quick check)."""
    from megasim.gpu.backend import require_cupy
    raw = Path(raw_dir)
    work = raw / f"{gpu}_trace_sample"
    work.mkdir(parents=True, exist_ok=True)
    todo = [c for c in cases(gpu) if (only is None or c[0] in only) and not (work / f"{c[0]}.json.gz").exists()]
    cp, t0, rows = require_cupy(), time.perf_counter(), []
    for case in todo:
        if time.perf_counter() - t0 > budget_s:
            break
        rows.append(trace_case(cp, work, case, gpu))
        cp.get_default_memory_pool().free_all_blocks()
    summary = work / "summary.jsonl"
    with summary.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    left = len(todo) - len(rows)
    packed = pack(work, raw / f"{gpu}_trace_sample.npz") if left == 0 else 0
    if packed:
        write_summary(summary, raw / f"{gpu}_trace_sample_summary.json")
    log(f"[trace sample] {len(rows)} cases in {time.perf_counter() - t0:.0f} s, {left} left"
        + (f"; packed {packed} cases" if packed else ""))
    return {"traced": len(rows), "left": left, "packed": packed}


__all__ = ["measure_trace_sample", "pack", "cases", "write_summary"]
