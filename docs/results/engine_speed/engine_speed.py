"""Simulator speed and memory: simulated thread blocks per second of CPU time against problem size, bytes per
block, and the CLI's own figures.

    python docs/results/engine_speed/engine_speed.py                 # the tables of docs/performance.md
    python docs/results/engine_speed/engine_speed.py --max-tbs 70000 # only the sizes up to 70,000 blocks
    python docs/results/engine_speed/engine_speed.py --cli           # CLI wall times and plot_timeline

Every run is on the calibrated H200 profile with the layer's default partition and the paper mapping, which is
what `megasim simulate --layer L` (or `--shape`) runs. CPU time is `time.process_time()` around the engine
call alone (`run_kernels`), best of `--reps` after one warm-up run (sizes over 100,000 blocks: one run, no
warm-up). Memory is measured in child processes, one per size: the engine's peak (tracemalloc, above what the
graph already holds) per block, and the whole `megasim simulate --json` process's peak resident set.

Speed is a benchmark, not a timed test: the machines here are shared, so the load average is printed too, and
whether the engine's hot modules run compiled (`megasim.engine.COMPILED`; `MEGASIM_PURE_PYTHON=1` runs the same
source as pure Python).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

# (label, --layer, --shape): ResNet-2 and VGG-1, the speed targets' two layers, then a VGG-1-like shape scaled in batch.
SIZES = [("ResNet-2", "ResNet-2", None), ("VGG-1", "VGG-1", None),
         ("128x256x56x56, K=256", None, "128,256,56,56,256"),
         ("VGG-1 shape, N=256", None, "256,128,112,112,128"),
         ("VGG-1 shape, N=1024", None, "1024,128,112,112,128")]
BIG = 100_000


def problem(layer: str | None, shape: str | None):
    """(graph, mapping, gpu) exactly as `megasim simulate --layer/--shape` builds them on h200."""
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import partition_for, resolve_layer
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    gpu, _ = gpu_for_simulation("h200")
    spec = resolve_layer(layer, shape)
    graph = build_graph(spec, WinogradVariant(), partition_for(spec, gpu.name))
    return graph, make(graph, "paper"), gpu


def num_blocks(layer: str | None, shape: str | None) -> int:
    """Blocks of the problem, from its geometry alone (no graph is built)."""
    from megasim.app.catalog import partition_for, resolve_layer
    from megasim.contract.graph import Geometry
    from megasim.contract.problem import WinogradVariant
    spec = resolve_layer(layer, shape)
    return Geometry.of(spec, WinogradVariant(), partition_for(spec, "h200")).num_tasks


def cpu_seconds(graph, kernels, gpu, reps: int) -> tuple[float, float]:
    """Best process CPU time of `reps` engine runs, and the prediction (us)."""
    from megasim.engine import run_kernels
    best, run = float("inf"), None
    for _ in range(reps):
        t = time.process_time()
        run = run_kernels(graph, kernels, gpu)
        best = min(best, time.process_time() - t)
    return best, gpu.cycles_to_us(run.total_cycles)


def speed_row(label: str, layer, shape, reps: int) -> dict:
    from megasim.engine import fused_kernels, nonfused_kernels
    graph, mapping, gpu = problem(layer, shape)
    n = graph.num_tasks
    fused, nonfused = fused_kernels(graph, mapping), nonfused_kernels(graph)
    if n <= BIG:
        cpu_seconds(graph, fused, gpu, 1)
    reps = reps if n <= BIG else 1
    f_s, f_us = cpu_seconds(graph, fused, gpu, reps)
    n_s, n_us = cpu_seconds(graph, nonfused, gpu, reps)
    return {"label": label, "blocks": n, "fused_cpu_s": f_s, "fused_tbs_per_cpu_s": n / f_s,
            "nonfused_cpu_s": n_s, "nonfused_tbs_per_cpu_s": n / n_s, "fused_us": f_us, "nonfused_us": n_us}


def memory_child(layer, shape) -> None:
    """In a child process: the fused run's tracemalloc peak above the built graph, per block (JSON line)."""
    from megasim.engine import fused_kernels, run_kernels
    graph, mapping, gpu = problem(layer, shape)
    kernels = fused_kernels(graph, mapping)
    tracemalloc.start()
    run_kernels(graph, kernels, gpu)
    peak = tracemalloc.get_traced_memory()[1]
    print(json.dumps({"engine_peak_bytes": peak, "engine_bytes_per_tb": peak / graph.num_tasks}))


def cli_peak_rss(layer, shape) -> tuple[float, dict]:
    """Peak resident set (bytes) of one `megasim simulate --json` process, and its JSON. The peak is the
    child's own VmHWM (Linux): `ru_maxrss` would carry this parent's peak across `exec`."""
    argv = ["--layer", layer] if layer else ["--shape", shape]
    code = ("import sys; from megasim.app.cli import main; rc = main(sys.argv[1:]); "
            "print([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1], file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, "simulate", *argv, "--json"], check=True,
                         capture_output=True, text=True)
    rss = int(out.stderr.strip().splitlines()[-1]) * 1024
    return rss, json.loads(out.stdout)


def memory_row(label, layer, shape) -> dict:
    child = subprocess.run([sys.executable, __file__, "--memory-child", layer or "", shape or ""], check=True,
                           capture_output=True, text=True)
    engine = json.loads(child.stdout.strip().splitlines()[-1])
    rss, doc = cli_peak_rss(layer, shape)
    return {"label": label, "blocks": doc["num_tbs"], **engine, "cli_peak_rss_bytes": rss,
            "cli_rss_bytes_per_tb": rss / doc["num_tbs"],
            **{k: doc.get(k, float("nan")) for k in ("fused_sim_cpu_s", "fused_tbs_per_cpu_s", "nonfused_sim_cpu_s")}}


def print_tables(rows: list[dict], mem: list[dict]) -> None:
    print("| workload | blocks | fused CPU s | fused blocks / CPU s | non-fused blocks / CPU s | fused prediction us |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['label']} | {r['blocks']:,} | {r['fused_cpu_s']:.3f} | **{r['fused_tbs_per_cpu_s']:,.0f}** | "
              f"{r['nonfused_tbs_per_cpu_s']:,.0f} | {r['fused_us']:.2f} |")
    print()
    print("| workload | blocks | engine peak B / block | `simulate --json` peak RSS | RSS / block "
          "| CLI fused_tbs_per_cpu_s |")
    print("|---|---|---|---|---|---|")
    for m in mem:
        print(f"| {m['label']} | {m['blocks']:,} | {m['engine_bytes_per_tb']:.0f} | "
              f"{m['cli_peak_rss_bytes'] / 2**20:,.0f} MiB | {m['cli_rss_bytes_per_tb']:,.0f} B | "
              f"{m['fused_tbs_per_cpu_s']:,.0f} |")


def cli_rows() -> None:
    """Wall time of the CLI on VGG-1 and the default ResNet-2, and of plot_timeline on fused VGG-1."""
    from megasim.app.plot import plot_timeline
    from megasim.engine import fused_kernels, run_kernels
    for argv in (["simulate", "--layer", "VGG-1"], ["simulate"]):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "megasim.app.cli", *argv], check=True, stdout=subprocess.DEVNULL)
        print(f"megasim {' '.join(argv)}: {time.perf_counter() - t:.1f} s wall")
    graph, mapping, gpu = problem("VGG-1", None)
    records = run_kernels(graph, fused_kernels(graph, mapping), gpu).records
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        plot_timeline(records, Path(tmp) / "timeline.png", "VGG-1", num_sms=gpu.sm_count)
        print(f"plot_timeline of fused VGG-1 ({len(records):,} blocks): {time.perf_counter() - t:.1f} s")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--max-tbs", type=int, default=2_000_000, help="skip sizes with more blocks than this")
    p.add_argument("--cli", action="store_true", help="CLI wall times and plot_timeline instead of the tables")
    p.add_argument("--memory-child", nargs=2, metavar=("LAYER", "SHAPE"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child[0] or None, args.memory_child[1] or None)
        return
    if args.cli:
        cli_rows()
        return
    import megasim.engine
    compiled = getattr(megasim.engine, "COMPILED", False)  # False before the engine could be compiled
    print(f"engine: {'compiled (Cython)' if compiled else 'pure Python'}")
    print(f"load average before: {os.getloadavg()}")
    sizes = [s for s in SIZES if num_blocks(s[1], s[2]) <= args.max_tbs]
    rows = [speed_row(*s, args.reps) for s in sizes]
    mem = [memory_row(*s) for s in sizes]
    print(f"load average after: {os.getloadavg()}")
    print_tables(rows, mem)
    print(json.dumps({"engine_compiled": compiled, "speed": rows, "memory": mem}))


if __name__ == "__main__":
    main()
