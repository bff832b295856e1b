"""`megasim bench`: the fused megakernel against our non-fused path, cuDNN and torch.

Per layer: build the TaskGraph under the layer's tuned partition, the
mapping (a strategy, or a JSON file), and time

- fused: one megakernel launch, ticket order; each timed call includes the
  device-to-device copy that resets the ticket, error word and counters;
- fused-raw: the same with raw blockIdx (comparison only; may time out);
- nonfused: the four kernels launched in order;
- nonfused-graph: the same four captured once into a CUDA graph, replayed;
- every cuDNN algorithm and torch, through gpu.baselines when present.

Method (device notes, METHOD.md): CUDA events around each call, warm-up
first, the median of `reps` (>= 20) calls, inputs rotated over enough fresh
random sets to exceed twice the L2, outputs poisoned with NaN before the
correctness run, relative L2 error against float64 (the CPU definition for
small layers, float64 cuDNN for large ones). Floors: Winograd FLOPs at the
FP32 FMA rate and one pass over x, w and y at the measured copy bandwidth.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict

import numpy as np

from megasim.gpu.backend import device_info, git_commit, require_cupy
from megasim.gpu.megakernel import FusedConv, Workspace
from megasim.gpu.timing import rotation_inputs, time_launches
from megasim.gpu.nonfused import NonFusedConv
from megasim.contract.encoding import SCHEMA_VERSION
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.files import write_then_rename
from megasim.contract.mapping import Mapping, make, validate
from megasim.contract.mapping.io import load_mapping, problem_of, read_mapping_file
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import GEMM_K_STEP, gemm_plan
from megasim.app.catalog import partition_for as scenario_partition

FP32_PEAK_FLOPS = 66.9e12  # H100/H200 SXM datasheet, non-tensor FP32
BENCH_SCHEMA_VERSION = 1


def _p(t, cpi, epg, kpg, kpo, kpf=8, threads=128) -> Partition:
    return Partition(tiles_per_group=t, input_channels_per_task=cpi, gemm_mats_per_task=epg,
                     gemm_k_per_task=kpg, output_channels_per_task=kpo, filter_k_per_task=kpf, threads=threads)


# Candidates for the hand sweep (`python -m megasim.app.bench`); the chosen ones live in scenarios/partitions/h200.toml.
SWEEP = [_p(64, 32, 1, 128, 32), _p(64, 32, 1, 64, 32), _p(128, 32, 1, 64, 32), _p(128, 32, 1, 128, 32, threads=256)]
SWEEP_SMALL_K = [_p(64, 32, 1, 48, 48, threads=96), _p(128, 32, 1, 48, 48, threads=96)]


def partition_for(layer: Layer, overrides: str | None = None) -> Partition:
    """The H200 partition of a layer (scenarios/partitions/h200.toml), with `--partition` overrides."""
    return scenario_partition(layer, "h200", overrides)


def _layers(args) -> list[Layer]:
    from megasim.app.catalog import layer_names, load_layer, resolve_layer
    name, shape = getattr(args, "layer", None), getattr(args, "shape", None)
    if getattr(args, "mapping", None) and not (name or shape):
        return [problem_of(read_mapping_file(args.mapping), args.mapping)[0]]
    if name == "all" and not shape:
        return [load_layer(n) for n in layer_names()]
    return [resolve_layer(name, shape)]


def _mapping(graph, args) -> Mapping:
    if getattr(args, "mapping", None):
        return load_mapping(args.mapping, graph)
    strategy = getattr(args, "strategy", None) or "paper"
    params = {k: getattr(args, k, None) for k in ("dig", "dgo", "m", "seed")}
    mp = make(graph, strategy, **{k: v for k, v in params.items() if v is not None})
    validate(graph, mp)
    return mp


def copy_bandwidth(cp, nbytes: int = 2 << 30) -> float:
    """Bytes read plus written per second of a large device-to-device copy (the DRAM ceiling)."""
    a = cp.empty(nbytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    stats = time_launches(cp, lambda i: b.__setitem__(Ellipsis, a), 1, 10, warmup=2)
    del a, b
    return 2 * nbytes / (stats["median_us"] * 1e-6)


def _reference(cp, layer, x, w):
    if layer.n * layer.h * layer.w * layer.c * layer.k <= 2e8:
        from megasim.gpu.winograd import direct_conv
        return cp.asarray(direct_conv(cp.asnumpy(x), cp.asnumpy(w))), "float64 direct (CPU)"
    from megasim.gpu.baselines import reference_fp64
    return reference_fp64(layer, x, w), "float64 cuDNN IMPLICIT_GEMM"


def _rel(cp, out, ref) -> float:
    d = out.astype(cp.float64) - ref
    return float(cp.linalg.norm(d.ravel()) / cp.linalg.norm(ref.ravel()))


def bench_layer(layer: Layer, args, bandwidth: float, *, partition: Partition | None = None,
                baselines: bool = True, raw_blockidx: bool = True, k_step: int = GEMM_K_STEP) -> dict:
    cp = require_cupy()
    reps = max(20, int(getattr(args, "reps", None) or 20))
    variant = WinogradVariant(getattr(args, "variant", None) or 4)
    if getattr(args, "mapping", None) and partition is None:
        _, variant, partition = problem_of(read_mapping_file(args.mapping), args.mapping)
    part = partition or partition_for(layer, getattr(args, "partition", None))
    graph = build_graph(layer, variant, part)
    mp = _mapping(graph, args)
    xs, wts, ys = rotation_inputs(cp, layer, int(getattr(args, "seed", None) or 0) + 7)
    nsets = len(xs)
    ws = Workspace(graph)
    fused = FusedConv(graph, mp, workspace=ws, k_step=k_step)
    nf = NonFusedConv(graph, workspace=ws, k_step=k_step)

    ref, ref_name = _reference(cp, layer, xs[0], wts[0])
    checks = {}
    y_f = cp.full_like(ys[0], cp.nan)
    fused.run(xs[0], wts[0], y_f)
    y_n = cp.full_like(ys[0], cp.nan)
    nf.run(xs[0], wts[0], y_n)
    for name, y in (("fused", y_f), ("nonfused", y_n)):
        checks[name] = {"rel_err": _rel(cp, y, ref), "nan_count": int(cp.isnan(y).sum())}
    bitwise = bool((y_f == y_n).all())
    del y_f, y_n

    timings = {}
    timings["fused"] = time_launches(cp, lambda i: fused.launch(xs[i], wts[i], ys[i]), nsets, reps)
    fused.check()
    try:
        if not raw_blockidx:
            raise MegasimError("not measured")
        raw = FusedConv(graph, mp, ticket=False, workspace=ws, spin_limit_ns=500_000_000, k_step=k_step)
        timings["fused-raw-blockidx"] = time_launches(cp, lambda i: raw.launch(xs[i], wts[i], ys[i]), nsets, reps)
        raw.check()
    except MegasimError as e:
        timings["fused-raw-blockidx"] = {"median_us": None, "error": str(e)}
    timings["nonfused"] = time_launches(cp, lambda i: nf.launch(xs[i], wts[i], ys[i]), nsets, reps)
    for i in range(nsets):
        nf.capture(xs[i], wts[i], ys[i])
    timings["nonfused-graph"] = time_launches(cp, lambda i: nf.launch_graph(xs[i], wts[i], ys[i]), nsets, reps)

    wino_flops = float(graph.flops.sum())
    min_bytes = 4 * (layer.n * layer.h * layer.w * (layer.c + layer.k) + 9 * layer.c * layer.k)
    entry = {"layer": asdict(layer), "variant": variant.m, "partition": part.to_dict(),
             "gemm_plan": asdict(gemm_plan(part)), "mapping": {"strategy": mp.strategy, "params": mp.params},
             "tasks": graph.summary(), "reference": ref_name, "checks": checks,
             "fused_equals_nonfused_bitwise": bitwise, "timings": timings,
             "floors_us": {"flops_at_fp32_peak": wino_flops / FP32_PEAK_FLOPS * 1e6,
                           "bytes_at_copy_bandwidth": min_bytes / bandwidth * 1e6},
             "winograd_gflop": wino_flops / 1e9, "direct_gflop": layer.direct_flops / 1e9, "baselines": []}
    del ws, fused, nf, ys
    if baselines:
        entry["baselines"] = _baselines(cp, layer, xs[0], wts[0], ref, reps)
    return entry


def _baselines(cp, layer, x, w, ref, reps) -> list[dict]:
    try:
        from megasim.gpu.baselines import run_baselines
    except ImportError:
        return []
    out = []
    for r in run_baselines(layer, x, w, reps):
        y = r.pop("output", None)
        if y is not None:
            r["rel_err"] = _rel(cp, y, ref)
        out.append(r)
    return out


def _fastest(entry) -> dict | None:
    ok = [r for r in entry["baselines"] if r.get("supported") and r.get("median_us")]
    return min(ok, key=lambda r: r["median_us"]) if ok else None


def format_table(entries: list[dict]) -> str:
    head = (f"{'layer':10} {'fused':>9} {'nf':>9} {'nf-graph':>9} {'cudnn best':>24} {'x cudnn':>7} "
            f"{'x nf-g':>6} {'floor':>8} {'err':>8}")
    lines = [head, "-" * len(head)]
    for e in entries:
        t = e["timings"]
        f, g = t["fused"]["median_us"], t["nonfused-graph"]["median_us"]
        best = _fastest(e)
        floor = max(e["floors_us"].values())
        lines.append(
            f"{e['layer']['name'][:10]:10} {f:9.1f} {t['nonfused']['median_us']:9.1f} {g:9.1f} "
            + (f"{best['name'][:15]:>15} {best['median_us']:8.1f} {best['median_us'] / f:7.2f}" if best
               else f"{'-':>24} {'-':>7}")
            + f" {g / f:6.2f} {floor:8.1f} {e['checks']['fused']['rel_err']:8.1e}")
    return "\n".join(lines)


def bench_main(args) -> int:
    """Entry point of `megasim bench` (args: an argparse Namespace from sim/cli.py)."""
    cp = require_cupy()
    layers = _layers(args)
    header = {"schema_version": BENCH_SCHEMA_VERSION, "task_map_schema_version": SCHEMA_VERSION,
              **device_info(), "git_commit": git_commit(), "reps": max(20, int(getattr(args, "reps", 0) or 20)),
              "fused_timing": "includes the control-word reset copy before each launch"}
    try:
        from megasim.gpu.baselines import device_header
        header["baseline_header"] = device_header(header["git_commit"])
    except ImportError:
        pass
    header["copy_bandwidth_bytes_per_s"] = copy_bandwidth(cp)
    header["fp32_peak_flops"] = FP32_PEAK_FLOPS
    entries = []
    for layer in layers:
        entries.append(bench_layer(layer, args, header["copy_bandwidth_bytes_per_s"]))
        cp.get_default_memory_pool().free_all_blocks()
        print(format_table(entries[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    doc = {"header": header, "layers": entries}
    if getattr(args, "out", None):
        with write_then_rename(args.out) as tmp:
            tmp.write_text(json.dumps(doc, indent=1, default=str))
    print(json.dumps(doc, default=str) if getattr(args, "json", False) else format_table(entries))
    return 0


def sweep_main(argv=None) -> int:
    """`python -m megasim.app.bench`: time the fused kernel of every layer under each sweep partition."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m megasim.app.bench")
    p.add_argument("--layer", default="all")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=None)
    p.add_argument("--k-step", type=int, default=GEMM_K_STEP, help=f"GEMM channels per step (default {GEMM_K_STEP})")
    p.add_argument("--tuned", action="store_true", help="only each layer's tuned partition")
    args = p.parse_args(argv)
    cp = require_cupy()
    bw = copy_bandwidth(cp)
    rows = []
    for layer in _layers(args):
        for part in ([partition_for(layer)] if args.tuned else SWEEP if layer.k >= 64 else SWEEP_SMALL_K):
            try:
                e = bench_layer(layer, args, bw, partition=part, baselines=False, raw_blockidx=False,
                                k_step=args.k_step)
            except MegasimError as err:
                print(f"{layer.name} {part}: {err}", flush=True)
                continue
            t = e["timings"]
            rows.append({"layer": layer.name, "partition": part.to_dict(), "fused_us": t["fused"]["median_us"],
                         "nonfused_graph_us": t["nonfused-graph"]["median_us"],
                         "rel_err": e["checks"]["fused"]["rel_err"], "bitwise": e["fused_equals_nonfused_bitwise"]})
            r = rows[-1]
            print(f"{layer.name:10} bk={args.k_step:2} t={part.tiles_per_group:3} e={part.gemm_mats_per_task} "
                  f"kpg={part.gemm_k_per_task:3} nt={part.threads}  fused {r['fused_us']:9.1f}  "
                  f"nf-graph {r['nonfused_graph_us']:9.1f}  err {r['rel_err']:.1e} bit {r['bitwise']}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"header": {**device_info(), "git_commit": git_commit()}, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(sweep_main())
