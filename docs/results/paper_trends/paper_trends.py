"""Paper trends on a simulated GPU: Fig. 8 (speedup vs C+K), Figs. 9 and 10 (D_IG, M).

For each paper layer: the non-fused time once, then the megakernel under
Algorithm 1 over a grid of (D_IG, D_GO, M); like the paper, each layer's
fused time is its best mapping. Runs in a process pool; writes JSON data and
PNG figures beside this script.

    python docs/results/paper_trends/paper_trends.py --gpu v100
"""
from __future__ import annotations

import argparse
import itertools
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from megasim.contract.files import write_then_rename

HERE = Path(__file__).resolve().parent

DIG = (0, 16, 32, 64, 256, 1024)
DGO = (128, 1024)
M = (1, 2, 4, 8, 16)


def _fused_us(job):
    name, gpu_name, dig, dgo, m = job
    from megasim.engine import fused_kernels, run_kernels
    from megasim.engine.l2 import hit_rate
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.app.catalog import load_layer
    from megasim.app.catalog import load_gpu
    gpu = load_gpu(gpu_name)
    graph = build_graph(load_layer(name))
    run = run_kernels(graph, fused_kernels(graph, make(graph, "paper", dig=dig, dgo=dgo, m=m)), gpu)
    rec = run.records
    return {"layer": graph.layer.name, "dig": dig, "dgo": dgo, "m": m, "fused_us": gpu.cycles_to_us(run.total_cycles),
            "spin_us": float((rec["ready_us"] - rec["start_us"]).sum()),
            "l2_hit": {k: hit_rate(run.l2_stats, k) for k in run.l2_stats}}


def _nonfused_us(job):
    name, gpu_name = job
    from megasim.engine import nonfused_kernels, run_kernels
    from megasim.contract.graph import build_graph
    from megasim.app.catalog import load_layer
    from megasim.app.catalog import load_gpu
    gpu = load_gpu(gpu_name)
    graph = build_graph(load_layer(name))
    layer = graph.layer
    run = run_kernels(graph, nonfused_kernels(graph), gpu)
    return {"layer": layer.name, "c": layer.c, "k": layer.k, "nonfused_us": gpu.cycles_to_us(run.total_cycles)}


def run_study(gpu: str, layers, jobs: int) -> dict:
    fused_jobs = [(n, gpu, d, g, m) for n in layers for d, g, m in itertools.product(DIG, DGO, M)]
    with ProcessPoolExecutor(jobs) as pool:
        nonfused = list(pool.map(_nonfused_us, [(n, gpu) for n in layers]))
        fused = list(pool.map(_fused_us, fused_jobs, chunksize=4))
    return {"gpu": gpu, "grid": {"dig": DIG, "dgo": DGO, "m": M}, "nonfused": nonfused, "fused": fused}


def summarise(data: dict) -> list[dict]:
    rows = []
    for nf in data["nonfused"]:
        runs = [r for r in data["fused"] if r["layer"] == nf["layer"]]
        best = min(runs, key=lambda r: r["fused_us"])
        rows.append({**nf, "best": {k: best[k] for k in ("dig", "dgo", "m")}, "fused_us": best["fused_us"],
                     "speedup": nf["nonfused_us"] / best["fused_us"]})
    return rows


def plot(data: dict, out_dir) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarise(data)
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4))
    ck = np.array([r["c"] + r["k"] for r in rows])
    sp = np.array([r["speedup"] for r in rows])
    ax.scatter(ck, sp, color="tab:blue", zorder=3)
    for r, x, y in zip(rows, ck, sp):
        ax.annotate(r["layer"], (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
    order = np.argsort(ck)
    ax.plot(ck[order], np.poly1d(np.polyfit(np.log2(ck), sp, 1))(np.log2(ck[order])), "--", color="grey",
            label="log-linear fit")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("C + K (channels in + out)")
    ax.set_ylabel("fused speedup over non-fused")
    ax.set_title(f"Simulated {data['gpu'].upper()}: fusion gain vs channel count (paper Fig. 8)")
    ax.legend()
    paths.append(_save(fig, out_dir, f"paper_fig8_{data['gpu']}.png"))

    for param, fixed, title, fname in (("dig", "m", "D_IG (blocks)", "fig9"), ("m", "dig", "M (groups per filter matrix)", "fig10")):
        fig, ax = plt.subplots(figsize=(7, 4))
        for name in ("ResNet-1", "ResNet-2", "ResNet-3", "ResNet-4"):
            runs = [r for r in data["fused"] if r["layer"] == name]
            if not runs:
                continue
            best = min(runs, key=lambda r: r["fused_us"])
            line = sorted((r[param], r["fused_us"]) for r in runs
                          if r[fixed] == best[fixed] and r["dgo"] == best["dgo"])
            nf = next(n["nonfused_us"] for n in data["nonfused"] if n["layer"] == name)
            ax.plot([x for x, _ in line], [nf / y for _, y in line], "o-",
                    label=f"{name} ({fixed}={best[fixed]}, D_GO={best['dgo']})")
        ax.set_xscale("symlog", base=2, linthresh=16 if param == "dig" else 1)
        ax.set_xlabel(title)
        ax.set_ylabel("fused speedup over non-fused")
        ax.set_title(f"Simulated {data['gpu'].upper()}: effect of {title.split(' ')[0]} (paper Fig. {fname[3:]})")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.legend(fontsize=8)
        paths.append(_save(fig, out_dir, f"paper_{fname}_{data['gpu']}.png"))
    return paths


def _save(fig, out_dir, name) -> str:
    from megasim.app.plot import save_figure
    path = f"{out_dir}/{name}"
    fig.tight_layout()
    save_figure(fig, path)
    return path


def main(argv=None) -> None:
    from megasim.app.catalog import layer_names
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--gpu", default="v100")
    p.add_argument("--out", default=str(HERE), help="folder for the JSON data and the figures")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--layers", nargs="*", default=None)
    p.add_argument("--replot", action="store_true", help="redraw from the saved JSON")
    args = p.parse_args(argv)
    data_path = f"{args.out}/paper_trends_{args.gpu}.json"
    if args.replot:
        with open(data_path) as fh:
            data = json.load(fh)
    else:
        data = run_study(args.gpu, args.layers or layer_names(), args.jobs)
        with write_then_rename(data_path) as tmp:
            tmp.write_text(json.dumps(data, indent=1))
    for path in plot(data, args.out):
        print("wrote", path)
    for r in summarise(data):
        print(f"{r['layer']:9s} C+K={r['c'] + r['k']:5d} non-fused {r['nonfused_us']:8.1f} us  best fused "
              f"{r['fused_us']:8.1f} us  speedup {r['speedup']:.3f}  at {r['best']}")


if __name__ == "__main__":
    main()
