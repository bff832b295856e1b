"""`megasim search --network NAME`: each distinct 3x3 stride-1 layer of a network, searched once.

A network file (`catalog.load_network`) lists shapes with how often each
occurs; shapes that repeat under other names are one search, and its count
is their sum. Each layer gets a folder of its own under --out (its table,
best.json, heatmaps and, by default, its study.journal), so `megasim simulate
--mapping OUT/<layer>/best.json` reproduces any one of them, and a rerun
resumes every layer's study. The layers are searched one after another on
one executor (the process pool or the Dask cluster), each with several
evaluations in flight, so the workers stay busy across the whole network.
The summary weights each layer's best build, its fastest fused build and its
fastest non-fused build by its count, as the paper's network totals do.
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
    """Per layer: count, the best build and its time, the fastest fused and non-fused builds (the fusion
    margin); totals weighted by count (None if a layer has no result)."""
    rows = []
    for nl in layers:
        f = found.get(nl.folder)
        best = f.best if f else None
        margin = (f.header.get("fusion_margin") if f else None) or {}
        nonfused = margin.get("nonfused_us")
        if nonfused is None and best and best.get("fused_us") is None:  # a search of non-fused builds only
            nonfused = best["time_us"]
        L = nl.layer
        rows.append({"layer": nl.folder, "names": nl.names, "shape": [L.n, L.c, L.h, L.w, L.k], "count": nl.count,
                     "best": best and best["label"], "best_us": best and best["time_us"],
                     "fused_us": margin.get("fused_us"),
                     "nonfused_us": nonfused,
                     "speedup": margin["nonfused_us"] / margin["fused_us"] if margin else None,
                     "paper_default_us": f and (f.result.reference or {}).get("time_us"),
                     "best_point": best and {p.name: best[p.name] for p in f.space.params},
                     "best_json": str(f.out / "best.json") if best else None})
    totals = {}
    for key in ("best_us", "fused_us", "nonfused_us"):
        complete = all(r[key] for r in rows)
        totals[key] = sum(r["count"] * r[key] for r in rows) if complete else None
    totals["speedup"] = (totals["nonfused_us"] / totals["fused_us"]
                         if totals["fused_us"] and totals["nonfused_us"] else None)
    totals["complete"] = all(totals[k] is not None for k in ("best_us", "fused_us", "nonfused_us"))
    return {"network": network, "gpu": gpu, "model": model, "budget_per_layer": budget, "layers": rows,
            "totals": totals}


def table_text(doc: dict) -> str:
    def num(v, fmt):
        return format(v, fmt) if v is not None else "-"
    lines = [f"{doc['network']} on {doc['gpu']}: the best build per distinct layer, and fused against non-fused",
             f"{'layer':14} {'shape':>22} {'count':>5} {'best build':>28} {'best us':>9} {'fused us':>9} "
             f"{'non-fused us':>12} {'fusing':>7}"]
    for r in doc["layers"]:
        shape = "x".join(map(str, r["shape"][:4])) + f"->{r['shape'][4]}"
        lines.append(f"{r['layer']:14} {shape:>22} {r['count']:5d} {r['best'] or '-':>28} {num(r['best_us'], '9.1f')} "
                     f"{num(r['fused_us'], '9.1f')} {num(r['nonfused_us'], '12.1f')} {num(r['speedup'], '6.2f')}x")
    t = doc["totals"]
    lines.append(f"{'total (x count)':14} {'':>22} {sum(r['count'] for r in doc['layers']):5d} {'':>28} "
                 f"{num(t['best_us'], '9.1f')} {num(t['fused_us'], '9.1f')} {num(t['nonfused_us'], '12.1f')} "
                 f"{num(t['speedup'], '6.2f')}x")
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
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.search.command import counts_line, prepare, search_layer
    from megasim.app.search.lock import locked_outputs
    from megasim.app.search.runner import open_executor
    from megasim.app.search.store import default_storage, storage_file
    entries = catalog.load_network(args.network)
    gpu, model_note, intervals = simulation_model(args.gpu, args.uncalibrated, args.profile)
    layers = distinct_layers(entries)
    prepared = {nl.folder: prepare(nl.layer, args, gpu, intervals) for nl in layers}
    out = Path(args.out or f"out/search/{args.network}-{gpu.name}")
    found, interrupted = {}, False
    with locked_outputs(out, storage_file(args.storage), args.storage):
        executor = open_executor(config)
        try:
            for nl in layers:
                folder = out / nl.folder
                storage = args.storage or default_storage(folder)
                with locked_outputs(folder):
                    f = search_layer(*prepared[nl.folder], config, storage, folder, model_note, executor, intervals)
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
