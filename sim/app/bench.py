"""`megasim bench`: the fused megakernel against our non-fused path, cuDNN and torch.

Per layer: build the TaskGraph under the layer's tuned partition, the
mapping (a strategy, or a JSON file), and time

- fused: one megakernel launch, ticket order; each timed call includes the
  device-to-device copy that resets the ticket, error word and counters;
- fused-raw: the same with raw blockIdx (comparison only; may time out);
- nonfused: the four kernels launched in order;
- nonfused-graph: the same four captured once into a CUDA graph, replayed;
- every other build of the layer's decision space, the warp body's also in 3xTF32 unless `--precision fp32`
  (`bench_best`, which also holds the rule a run must meet to count as accurate);
- every cuDNN algorithm and torch, through gpu.baselines.

Method (device notes, METHOD.md): CUDA events around each call, warm-up
first, the median of `reps` (>= 20) calls, inputs rotated over enough fresh
random sets to exceed twice the L2, outputs poisoned with NaN before the
correctness run, relative L2 error against float64 (the CPU definition for
small layers, float64 cuDNN for large ones). Floors: Winograd FLOPs at the
FP32 FMA rate and one pass over x, w and y at the measured copy bandwidth.

With `--trace`, one more traced fused launch and one traced non-fused run
give the measured per-block timelines of the layer (`bench_trace`).
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace

from megasim.gpu.backend import device_info, measurement_header, require_cupy
from megasim.gpu.baselines import device_header, run_baselines
from megasim.gpu.interpreter import CudaInterpreter
from megasim.gpu.megakernel import Workspace
from megasim.gpu.microbench_stats import gpu_short_name
from megasim.gpu.timing import rotation_inputs, time_launches
from megasim.contract.encoding import SCHEMA_VERSION
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.io.writing import write_then_rename
from megasim.contract.mapping.io import problem_of, read_mapping_file
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import GEMM_K_STEP, gemm_plan
from megasim.contract.scheduling import MODES
from megasim.app.bench_best import best_fused, best_nonfused, fp32_accuracy, space_runs, swept_precisions
from megasim.app.catalog import load_gpu, partition_for
from megasim.app.choices import mapping_from_args

BENCH_SCHEMA_VERSION = 1


def scenario_gpu(args) -> str:
    """The GPU whose partition table (scenarios/partitions) the kernels use: `--gpu`, else this device's."""
    return getattr(args, "gpu", None) or gpu_short_name(device_info()["device"])


def fp32_peak_flops(gpu: str) -> float:
    """The GPU's non-tensor FP32 peak in FLOP/s, from its datasheet spec (scenarios/gpus)."""
    return load_gpu(gpu).peak_fp32_tflops * 1e12


def _layers(args) -> list[Layer]:
    from megasim.app.catalog import layer_names, load_layer, resolve_layer
    name, shape = getattr(args, "layer", None), getattr(args, "shape", None)
    if getattr(args, "mapping", None) and not (name or shape):
        return [problem_of(read_mapping_file(args.mapping), args.mapping)[0]]
    if name == "all" and not shape:
        return [load_layer(n) for n in layer_names()]
    return [resolve_layer(name, shape)]


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


def _timed_runs(graph, mp, config: RunConfig, ws: Workspace, k_step: int, raw_blockidx: bool):
    """The fused (each scheduling mode) and non-fused runs, a correctness launch each, then timed."""
    def cuda(launch: str, mode: str = "static", **build):
        return CudaInterpreter(workspace=ws, k_step=k_step, **build).run(graph, mp,
                                                                         replace(config, launch=launch, mode=mode))

    fused = cuda("fused")
    timings = {"fused": fused.native}
    try:
        if not raw_blockidx:
            raise MegasimError("not measured")
        timings["fused-raw-blockidx"] = cuda("fused", ticket=False, spin_limit_ns=500_000_000).native
    except MegasimError as e:
        timings["fused-raw-blockidx"] = {"median_us": None, "error": str(e)}
    runs = {"fused": fused}
    for mode in MODES[1:]:
        runs[f"fused-{mode}"] = cuda("fused", mode=mode)
        timings[f"fused-{mode}"] = runs[f"fused-{mode}"].native
    runs["nonfused"] = cuda("nonfused")
    timings["nonfused"] = runs["nonfused"].native
    timings["nonfused-graph"] = cuda("nonfused", graph_capture=True).native
    return runs, timings


def _score(cp, ref):
    return lambda y: {"rel_err": _rel(cp, y, ref), "nan_count": int(cp.isnan(y).sum())}


def bench_layer(layer: Layer, args, bandwidth: float, *, partition: Partition | None = None,
                baselines: bool = True, raw_blockidx: bool = True, k_step: int = GEMM_K_STEP,
                space: bool = True) -> dict:
    """Every timing of one layer; with `space`, every other build of its decision space too, at the precisions
    `--precision` names (not with a mapping file, which fixes the build: `bench_best.space_runs`), and the best
    accurate builds."""
    cp = require_cupy()
    reps = max(20, int(getattr(args, "reps", None) or 20))
    variant = WinogradVariant(getattr(args, "variant", None) or 4)
    if getattr(args, "mapping", None) and partition is None:
        _, variant, partition = problem_of(read_mapping_file(args.mapping), args.mapping)
    part = partition or partition_for(layer, scenario_gpu(args), getattr(args, "partition", None))
    graph = build_graph(layer, variant, part)
    mp = mapping_from_args(graph, args)
    xs, wts, ys = rotation_inputs(cp, layer, int(getattr(args, "seed", None) or 0) + 7)
    ws = Workspace(graph)
    config = RunConfig(inputs=tuple(zip(xs, wts, ys)), reps=reps)
    ref, ref_name = _reference(cp, layer, xs[0], wts[0])
    runs, timings = _timed_runs(graph, mp, config, ws, k_step, raw_blockidx)
    checks = {name: _score(cp, ref)(e.output) for name, e in runs.items()}
    bitwise = bool((runs["fused"].output == runs["nonfused"].output).all())
    modes_bitwise = all(bool((e.output == runs["fused"].output).all()) for e in runs.values())
    del runs
    gemm_partitions = {}
    sweep = space and not getattr(args, "mapping", None)
    precisions = swept_precisions(getattr(args, "precision", None)) if sweep else ("fp32",)
    if sweep:
        workspaces: dict = {}

        def cuda_for(g, **build):
            ws_g = workspaces.setdefault((g.variant.m, g.partition), Workspace(g))
            return CudaInterpreter(workspace=ws_g, k_step=k_step, **build)

        more = space_runs(graph, lambda g: mapping_from_args(g, args), config, cuda_for, _score(cp, ref), set(timings),
                          precisions)
        timings.update(more[0])
        checks.update(more[1])
        gemm_partitions = {k: p for k, p in more[2].items() if p != part.to_dict()}
        del workspaces

    wino_flops = float(graph.flops.sum())
    entry = {"layer": asdict(layer), "variant": variant.m, "partition": part.to_dict(),
             "gemm_plan": asdict(gemm_plan(part)), "mapping": {"strategy": mp.strategy, "params": mp.params},
             "tasks": graph.summary(), "reference": ref_name, "checks": checks,
             "fused_equals_nonfused_bitwise": bitwise, "modes_bitwise_equal": modes_bitwise, "timings": timings,
             "gemm_partitions": gemm_partitions, "precisions": list(precisions),
             "floors_us": {"flops_at_fp32_peak": wino_flops / fp32_peak_flops(scenario_gpu(args)) * 1e6,
                           "bytes_at_copy_bandwidth": layer.min_dram_bytes / bandwidth * 1e6},
             "winograd_gflop": wino_flops / 1e9, "direct_gflop": layer.direct_flops / 1e9, "baselines": []}
    entry["fp32_accuracy"] = fp32_accuracy(entry)
    entry["best_fused"] = best_fused(entry)
    entry["best_nonfused"] = best_nonfused(entry)
    if getattr(args, "trace", None):
        from megasim.app.bench_trace import trace_layer
        entry["trace"] = str(trace_layer(args.trace, graph, mp, _trace_mode(args), ws, (xs, wts, ys)))
    del ws, ys, config
    if baselines:
        entry["baselines"] = _baselines(cp, layer, xs[0], wts[0], ref, reps)
        entry["fastest_baseline"] = fastest_baseline(entry)
    return entry


def _trace_mode(args) -> str:
    """The scheduling mode `--trace` records: the mapping file's, else static."""
    if getattr(args, "mapping", None):
        from megasim.contract.mapping.io import mode_of
        return mode_of(read_mapping_file(args.mapping), args.mapping)
    return MODES[0]


def _baselines(cp, layer, x, w, ref, reps) -> list[dict]:
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


def fastest_baseline(entry) -> dict | None:
    """The fastest strict-FP32 cuDNN/torch algorithm's name, time and error: the error our best builds'
    `rel_err` is read beside."""
    base = _fastest(entry)
    return base and {k: base.get(k) for k in ("name", "median_us", "rel_err")}


def _us(value) -> str:
    return f"{value:9.1f}" if value is not None else f"{'-':>9}"


def _err(value) -> str:
    return f"{value:9.1e}" if value is not None else f"{'-':>9}"


def _best_fused_or_static(e) -> dict:
    """The entry's best fused build, else (no run accurate at its precisions) the static fused run."""
    return e.get("best_fused") or {"median_us": e["timings"]["fused"]["median_us"], "mode": "static",
                                   "variant": e["variant"], "precision": "fp32",
                                   "rel_err": e["checks"]["fused"]["rel_err"]}


def format_table(entries: list[dict]) -> str:
    """Per layer: fused in each mode, the best accurate fused build (mode/variant/body), and that best against
    our fastest accurate non-fused build (graph-captured, any variant and body) and the fastest cuDNN/torch
    baseline; then the best fused build's precision and error beside that baseline's error."""
    head = (f"{'layer':10} {'fused':>9} {'persist':>9} {'ready-q':>9} {'best fused':>20} {'best nf':>9} {'cudnn best':>24} "
            f"{'x cudnn':>7} {'x nf':>6} {'floor':>8} {'prec':>6} {'err':>9} {'cudnn err':>9}")
    lines = [head, "-" * len(head)]
    for e in entries:
        t = e["timings"]
        g = (e.get("best_nonfused") or {}).get("median_us") or t["nonfused-graph"]["median_us"]
        fused = _best_fused_or_static(e)
        f = fused["median_us"]
        label = f"{fused['mode'][:4]}/F{fused['variant']}{'/w' if fused.get('gemm') == 'warp' else ''} {f:8.1f}"
        base = _fastest(e)
        lines.append(
            f"{e['layer']['name'][:10]:10} "
            + " ".join(_us(t.get(k, {}).get("median_us")) for k in ("fused", "fused-persistent", "fused-ready_queue"))
            + f" {label:>20} {g:9.1f} "
            + (f"{base['name'][:15]:>15} {base['median_us']:8.1f} {base['median_us'] / f:7.2f}" if base
               else f"{'-':>24} {'-':>7}")
            + f" {g / f:6.2f} {max(e['floors_us'].values()):8.1f} {fused.get('precision', 'fp32'):>6} "
            + f"{_err(fused['rel_err'])} {_err(base and base.get('rel_err'))}")
    return "\n".join(lines)


def bench_main(args) -> int:
    """Entry point of `megasim bench` (args: an argparse Namespace from sim/cli.py). With a mapping file and
    no trace, exactly the build it names (`bench_build`)."""
    if getattr(args, "mapping", None) and not getattr(args, "trace", None):
        from megasim.app.bench_build import bench_mapping_file
        return bench_mapping_file(args)
    cp = require_cupy()
    layers = _layers(args)
    if getattr(args, "trace", None) and len(layers) > 1:
        raise MegasimError("--trace records one layer; give --layer NAME, --shape or --mapping")
    header = {**measurement_header(), "schema_version": BENCH_SCHEMA_VERSION,
              "task_map_schema_version": SCHEMA_VERSION, "gpu": scenario_gpu(args),
              "precision": getattr(args, "precision", None) or "all",
              "reps": max(20, int(getattr(args, "reps", 0) or 20)),
              "fused_timing": "includes the control-word reset copy before each launch"}
    header["baseline_header"] = device_header()
    header["copy_bandwidth_bytes_per_s"] = copy_bandwidth(cp)
    header["fp32_peak_flops"] = fp32_peak_flops(header["gpu"])
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

