"""Simulator speed: simulated thread blocks per second, the CLI's wall time on VGG-1, and plotting VGG-1.

    python docs/results/engine_speed/engine_speed.py    # prints the rows of docs/performance.md

Speed is a benchmark, not a timed test: the machines here are shared.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from megasim.engine import fused_kernels, nonfused_kernels, run_kernels
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.app.catalog import load_layer
from megasim.app.catalog import load_gpu
from megasim.app.plot import plot_timeline


def blocks_per_second(layer_name: str, gpu_name: str, reps: int, quantum=None) -> dict:
    gpu = load_gpu(gpu_name)
    t0 = time.perf_counter()
    graph = build_graph(load_layer(layer_name))
    mapping = make(graph, "paper")
    build_s = time.perf_counter() - t0
    kw = {} if quantum is None else {"quantum": quantum}
    fused, nonfused = [], []
    for _ in range(reps):
        t = time.perf_counter()
        run = run_kernels(graph, fused_kernels(graph, mapping), gpu, **kw)
        fused.append(time.perf_counter() - t)
        t = time.perf_counter()
        run_kernels(graph, nonfused_kernels(graph), gpu, **kw)
        nonfused.append(time.perf_counter() - t)
    n = graph.num_tasks
    return {"layer": layer_name, "gpu": gpu_name, "blocks": n, "graph_and_mapping_s": build_s,
            "fused_simulated_us": gpu.cycles_to_us(run.total_cycles),
            "fused_s": min(fused), "fused_blocks_per_s": n / min(fused),
            "nonfused_s": min(nonfused), "nonfused_blocks_per_s": n / min(nonfused)}


def cli_wall_seconds(argv) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "megasim.app.cli", *argv], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def plot_seconds(layer_name: str, gpu_name: str) -> tuple[int, float]:
    """Blocks in the fused run's timeline, and the seconds `plot_timeline` takes to draw it."""
    gpu = load_gpu(gpu_name)
    graph = build_graph(load_layer(layer_name))
    records = run_kernels(graph, fused_kernels(graph, make(graph, "paper")), gpu).records
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        plot_timeline(records, Path(tmp) / "timeline.png", layer_name, num_sms=gpu.sm_count)
        return len(records), time.perf_counter() - t


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    for layer in ("ResNet-2", "ResNet-1"):
        for quantum in (None, 0.0):
            r = blocks_per_second(layer, "h200", args.reps, quantum)
            label = "default quantum" if quantum is None else "exact (quantum 0)"
            print(f"{layer} on h200, {label}: {r['blocks']} blocks; graph+mapping "
                  f"{r['graph_and_mapping_s'] * 1e3:.0f} ms; fused {r['fused_blocks_per_s']:,.0f} blocks/s "
                  f"({r['fused_s'] * 1e3:.0f} ms, predicts {r['fused_simulated_us']:.2f} us); "
                  f"non-fused {r['nonfused_blocks_per_s']:,.0f} blocks/s")
    print(f"megasim simulate --layer VGG-1: {cli_wall_seconds(['simulate', '--layer', 'VGG-1']):.1f} s wall")
    print(f"megasim simulate (default, ResNet-2): {cli_wall_seconds(['simulate']):.1f} s wall")
    blocks, seconds = plot_seconds("VGG-1", "h200")
    print(f"plot_timeline of fused VGG-1 on h200 ({blocks:,} blocks): {seconds:.1f} s")


if __name__ == "__main__":
    main()
