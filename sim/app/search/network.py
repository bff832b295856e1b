"""`megasim search --network NAME`: each distinct 3x3 stride-1 layer of a network, searched once.

A network file (`catalog.load_network`) lists shapes with how often each
occurs; shapes that repeat under other names are one search, and its count
is their sum. Each layer gets a folder of its own under --out (its table,
best.json, heatmaps and, by default, its study.journal), so `megasim simulate
--mapping OUT/<layer>/best.json` reproduces any one of them, and a rerun
resumes every layer's study. The layers are searched one after another on
one executor (the process pool or the Dask cluster), each with several
evaluations in flight, so the workers stay busy across the whole network.
The summary weights each layer's best fused time and its non-fused time
(the four kernels of the best point's own variant and partition) by its
count, as the paper's network totals do.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from megasim.io.writing import write_then_rename


@dataclass
class NetworkLayer:
    layer: object
    count: int
    names: list
    folder: str


def distinct_layers(entries) -> list[NetworkLayer]:
    """Group (layer, count) entries by shape (n, c, h, w, k), in order of first appearance."""
    by_shape: dict = {}
    for layer, count in entries:
        shape = (layer.n, layer.c, layer.h, layer.w, layer.k)
        if shape in by_shape:
            by_shape[shape].count += count
            by_shape[shape].names.append(layer.name)
        else:
            by_shape[shape] = NetworkLayer(layer, count, [layer.name], "")
    used: set = set()
    for nl in by_shape.values():
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", nl.layer.name.rsplit("/", 1)[-1]).strip("._") or "layer"
        folder, i = base, 2
        while folder in used:
            folder, i = f"{base}-{i}", i + 1
        used.add(folder)
        nl.folder = folder
    return list(by_shape.values())


def summary(network: str, gpu: str, model: str, budget, layers: list[NetworkLayer], found: dict) -> dict:
    """Per layer: count, best fused, its non-fused, speedup; totals weighted by count (None if a layer
    has no result)."""
    rows = []
    for nl in layers:
        f = found.get(nl.folder)
        best = f.best if f else None
        L = nl.layer
        rows.append({"layer": nl.folder, "names": nl.names, "shape": [L.n, L.c, L.h, L.w, L.k], "count": nl.count,
                     "best_fused_us": best and best["fused_us"], "nonfused_us": best and best["nonfused_us"],
                     "speedup": best and best["speedup_vs_nonfused"],
                     "paper_default_fused_us": f and (f.result.reference or {}).get("fused_us"),
                     "best_point": best and {p.name: best[p.name] for p in f.space.params},
                     "best_json": str(f.out / "best.json") if best else None})
    complete = all(r["best_fused_us"] and r["nonfused_us"] for r in rows)
    fused = sum(r["count"] * r["best_fused_us"] for r in rows) if complete else None
    nonfused = sum(r["count"] * r["nonfused_us"] for r in rows) if complete else None
    return {"network": network, "gpu": gpu, "model": model, "budget_per_layer": budget, "layers": rows,
            "totals": {"fused_us": fused, "nonfused_us": nonfused,
                       "speedup": nonfused / fused if complete else None, "complete": complete}}


def table_text(doc: dict) -> str:
    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"
    lines = [f"{doc['network']} on {doc['gpu']}: best fused time per distinct layer",
             f"{'layer':14} {'shape':>22} {'count':>5} {'best fused us':>13} {'non-fused us':>12} {'speedup':>7}"]
    for r in doc["layers"]:
        shape = "x".join(map(str, r["shape"][:4])) + f"->{r['shape'][4]}"
        lines.append(f"{r['layer']:14} {shape:>22} {r['count']:5d} {num(r['best_fused_us'], '13.1f')} "
                     f"{num(r['nonfused_us'], '12.1f')} {num(r['speedup'], '6.2f')}x")
    t = doc["totals"]
    lines.append(f"{'total (x count)':14} {'':>22} {sum(r['count'] for r in doc['layers']):5d} "
                 f"{num(t['fused_us'], '13.1f')} {num(t['nonfused_us'], '12.1f')} {num(t['speedup'], '6.2f')}x")
    return "\n".join(lines)


def write_summary(doc: dict, out: Path) -> list[Path]:
    paths = [out / "network_summary.json", out / "network_summary.txt"]
    with write_then_rename(paths[0]) as tmp:
        tmp.write_text(json.dumps(doc, indent=1))
    with write_then_rename(paths[1]) as tmp:
        tmp.write_text(table_text(doc) + "\n")
    return paths


def search_network(args, config) -> int:
    from megasim.app import catalog
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.search.command import counts_line, prepare, search_layer
    from megasim.app.search.lock import locked_outputs
    from megasim.app.search.runner import open_executor
    from megasim.app.search.store import default_storage, storage_file
    entries = catalog.load_network(args.network)
    gpu, model_note = gpu_for_simulation(args.gpu, args.uncalibrated)
    layers = distinct_layers(entries)
    prepared = {nl.folder: prepare(nl.layer, args, gpu) for nl in layers}
    out = Path(args.out or f"out/search/{args.network}-{gpu.name}")
    found, interrupted = {}, False
    with locked_outputs(out, storage_file(args.storage), args.storage):
        executor = open_executor(config)
        try:
            for nl in layers:
                folder = out / nl.folder
                storage = args.storage or default_storage(folder)
                with locked_outputs(folder):
                    f = search_layer(*prepared[nl.folder], config, storage, folder, model_note, executor)
                found[nl.folder] = f
                print(f"{nl.folder} (x{nl.count}): {counts_line(f)}")
                if f.result.interrupted:
                    interrupted = True
                    break
        finally:
            executor.shutdown(cancel=interrupted)
        budget = config.budget or ("each layer's grid" if config.method == "grid" else 200)
        doc = summary(args.network, gpu.name, model_note, budget, layers, found)
        written = write_summary(doc, out)
    print(model_note)
    print(table_text(doc))
    print("wrote " + ", ".join(str(p) for p in written) + f" and {len(found)} layer folders under {out}")
    if interrupted:
        print("interrupted: finished evaluations are kept; run the same command to continue", file=sys.stderr)
        return 130
    return 0
