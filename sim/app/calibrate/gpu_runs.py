"""Measured kernel runs for the calibration fit: tasks in isolation, and layers x mappings.

Two kinds of data come from the real Winograd kernels:

- **Tasks** (`measure_tasks`): each stage kernel of the non-fused path alone,
  a grid of only that task type, on a few layers, with L2 flushed before each
  call. It runs at the occupancy the kernel gets and at lower ones forced by
  unused dynamic shared memory, so the fit sees a task type's cost per block
  as its SM fills.
- **Runs** (`measure_runs`): per paper layer, the fused megakernel under the
  paper's default mapping, a grid of Algorithm-1 parameters (D_IG, D_GO, M)
  and random topological orders, plus the non-fused time (graph replay, and
  each of its four kernels timed in stage order). Whole layers and, on the
  other layers, a few mappings are held out from the fit (`split_for`); the
  report scores them separately. One trace-mode run gives per-block records.

Timing reuses `gpu.timing.time_launches` (CUDA events, warm-up, median of reps over
rotated input sets); the mapping plan and the split are pure functions, so
CI checks them without a GPU.
"""
from __future__ import annotations

import time
import zlib
from dataclasses import asdict

import numpy as np

from megasim.contract.graph import build_graph
from megasim.contract.mapping import make, validate
from megasim.contract.mapping.paper import PaperOptions
from megasim.contract.problem import OP_NAMES, Layer, Op, WinogradVariant

HELDOUT_LAYERS = ("ResNet-3", "YOLOv3-2", "VGG-2")
HELDOUT_MAPPINGS = 3
DEFAULT_PARAMS = asdict(PaperOptions())
# Algorithm-1 candidates in order of preference; "all"/"half" are that share of the layer's input transforms.
PAPER_GRID = (
    (0, 512, 4), ("all", 512, 4), (512, 512, 1), (512, 512, 2), (512, 512, 8), (512, 0, 4), (512, 2048, 4),
    (128, 512, 4), (2048, 512, 4), (0, 0, 1), ("half", 512, 4), (2048, 2048, 8), (0, 2048, 2), (64, 128, 1),
    ("all", 0, 8), (256, 4096, 2), (32, 0, 2), ("half", 0, 1),
)
GRID_MAPPINGS = 10
RANDOM_SEEDS = (1, 2)
TASK_LAYERS = ("ResNet-1", "ResNet-3", "VGG-2", "DenseNet")
TRACE_LAYER = "ResNet-2"
FORCED_OCCUPANCY = (1, 2, 4)
RUN_FIELDS = ("layer", "variant", "partition", "strategy", "params", "split", "fused_us", "nonfused_us",
              "nonfused_kernels_us", "fused_p10_us", "fused_p90_us")


# ---- pure (CPU) -------------------------------------------------------------------

def _resolve(value, n_inputs: int) -> int:
    return {"all": n_inputs, "half": n_inputs // 2}.get(value, value) if isinstance(value, str) else int(value)


def mapping_plan(graph, grid_size: int = GRID_MAPPINGS, seeds=RANDOM_SEEDS) -> list[tuple[str, dict, np.ndarray]]:
    """(strategy, params, order): the paper default, up to `grid_size` distinct grid points, random orders.

    Grid points whose order equals one already taken (small layers, where D_IG
    past the input count or M past the group count change nothing) are skipped.
    """
    n_inputs = len(graph.tasks_of(Op.INPUT_TRANSFORM))
    plan, seen = [], set()

    def add(strategy, params):
        mp = make(graph, strategy, **params)
        validate(graph, mp)
        key = mp.order.tobytes()
        if key not in seen:
            seen.add(key)
            plan.append((strategy, dict(params), mp.order))
            return True
        return False

    add("paper", DEFAULT_PARAMS)
    taken = 0
    for dig, dgo, m in PAPER_GRID:
        if taken == grid_size:
            break
        taken += add("paper", {"dig": _resolve(dig, n_inputs), "dgo": int(dgo), "m": int(m)})
    for seed in seeds:
        add("random_topo", {"seed": int(seed)})
    return plan


def split_for(layer_name: str, n_mappings: int) -> list[str]:
    """'train' or 'heldout' per mapping of a layer's plan (index 0 is the paper default).

    Held-out layers are held out whole. Elsewhere HELDOUT_MAPPINGS non-default
    mappings, drawn with a seed from the layer name, so the split never moves.
    """
    if layer_name in HELDOUT_LAYERS:
        return ["heldout"] * n_mappings
    out = ["train"] * n_mappings
    rng = np.random.default_rng(zlib.crc32(layer_name.encode()))
    k = min(HELDOUT_MAPPINGS, max(0, n_mappings - 2))
    for i in rng.choice(np.arange(1, n_mappings), size=k, replace=False):
        out[int(i)] = "heldout"
    return out


def run_record(layer: Layer, variant: int, partition, strategy: str, params: dict, split: str,
               fused: dict, nonfused_us: float, kernels_us: list[float]) -> dict:
    """One row of <gpu>_runs.json, exactly RUN_FIELDS."""
    return {"layer": asdict(layer), "variant": int(variant), "partition": partition.to_dict(),
            "strategy": strategy, "params": {k: int(v) for k, v in params.items()}, "split": split,
            "fused_us": float(fused["median_us"]), "nonfused_us": float(nonfused_us),
            "nonfused_kernels_us": [float(v) for v in kernels_us],
            "fused_p10_us": float(fused["p10_us"]), "fused_p90_us": float(fused["p90_us"])}


def check_runs_doc(doc: dict) -> list[str]:
    """Problems with a runs document (empty when it keeps the format)."""
    bad = []
    if "header" not in doc or "runs" not in doc:
        return ["missing header or runs"]
    for i, r in enumerate(doc["runs"]):
        if tuple(sorted(r)) != tuple(sorted(RUN_FIELDS)):
            bad.append(f"run {i}: fields {sorted(r)}")
            continue
        if r["split"] not in ("train", "heldout"):
            bad.append(f"run {i}: split {r['split']!r}")
        if len(r["nonfused_kernels_us"]) != 4:
            bad.append(f"run {i}: {len(r['nonfused_kernels_us'])} non-fused kernel times")
        if r["layer"]["name"] in HELDOUT_LAYERS and r["split"] != "heldout":
            bad.append(f"run {i}: layer {r['layer']['name']} is held out")
    return bad


def task_bytes(graph, op: Op) -> tuple[float, float, float]:
    """FLOPs, bytes read and bytes written by all tasks of one type (no cache)."""
    tasks = graph.tasks_of(op)
    rd, wr = graph.bytes_per_task()
    return float(graph.flops[tasks].sum()), float(rd[tasks].sum()), float(wr[tasks].sum())


# ---- device side ------------------------------------------------------------------

def stage_launches(nf, x, w, y) -> list[tuple]:
    """The non-fused path's launches in stage order (`NonFusedConv.steps`), as (name, kernel, grid, block, args,
    kwargs), unrun."""
    return [(k.name, k.function, (k.grid,), (k.block,), k.cupy_args(x, w, y), {}) for k in nf.steps()]


def _replay(call, stream=None, extra_smem: int = 0):
    name, fn, grid, block, args, kw = call
    kw = dict(kw)
    if stream is not None:
        kw["stream"] = stream
    if extra_smem:
        kw["shared_mem"] = kw.get("shared_mem", 0) + extra_smem
    fn(grid, block, args, **kw)


def occupancy(cp, fn, threads: int, dyn_smem: int) -> int:
    """Blocks per SM of a kernel: the driver's answer, else the register/thread/shared-memory arithmetic."""
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, dyn_smem))
    except Exception:
        attrs = cp.cuda.Device().attributes
        warps = -(-threads // 32)
        regs_warp = -(-fn.num_regs * 32 // 256) * 256
        smem = fn.shared_size_bytes + dyn_smem + 1024
        return max(0, min(32, 2048 // threads, attrs["MaxRegistersPerMultiprocessor"] // regs_warp // warps,
                          attrs["MaxSharedMemoryPerMultiprocessor"] // smem))


def measure_tasks(gpu: str, reps: int = 20, layers=None) -> list[dict]:
    """Each stage kernel alone, L2 flushed before every call, at its own and at forced lower occupancies.

    Each layer runs on `gpu`'s partition (scenarios/partitions).
    """
    from megasim.gpu.backend import require_cupy
    from megasim.app.catalog import partition_for
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs
    from megasim.app.catalog import load_layer
    cp = require_cupy()
    attrs = cp.cuda.Device().attributes
    smem_sm, smem_max = attrs["MaxSharedMemoryPerMultiprocessor"], attrs["MaxSharedMemoryPerBlockOptin"]
    flush = cp.empty(2 * attrs["L2CacheSize"] // 4, dtype=cp.float32)
    names = list(layers) if layers else list(TASK_LAYERS)
    rows = []
    for name in names:
        layer = load_layer(name)
        part = partition_for(layer, gpu)
        graph = build_graph(layer, WinogradVariant(4), part)
        ws = Workspace(graph)
        nf = NonFusedConv(graph, workspace=ws)
        (x,), (w,), (y,) = rotation_inputs(cp, layer, 11, nsets=1)
        nf.run(x, w, y)  # U, V, M hold real data for the stages that read them
        for op, call in zip(Op, stage_launches(nf, x, w, y)):
            _, fn, grid, block, _, kw = call
            threads, base = int(block[0]), int(kw.get("shared_mem", 0))
            natural = occupancy(cp, fn, threads, base)
            flops, rd, wr = task_bytes(graph, op)
            for occ in [natural] + [o for o in FORCED_OCCUPANCY if o < natural]:
                extra = 0
                if occ != natural:
                    extra = smem_sm // occ - 1024 - fn.shared_size_bytes - base
                    if extra <= 0 or fn.shared_size_bytes + base + extra > smem_max:
                        continue
                    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, base + extra)
                got = occupancy(cp, fn, threads, base + extra)
                us = []
                for _ in range(reps + 2):
                    flush.fill(0)
                    s, e = cp.cuda.Event(), cp.cuda.Event()
                    s.record()
                    _replay(call, extra_smem=extra)
                    e.record()
                    e.synchronize()
                    us.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
                us = np.array(us[2:])
                rows.append({"op": OP_NAMES[op], "layer": asdict(layer), "partition": part.to_dict(),
                             "blocks": int(grid[0]), "threads": threads, "blocks_per_sm": got,
                             "forced": occ != natural, "extra_dyn_smem_bytes": extra,
                             "regs_per_thread": int(fn.num_regs), "static_smem_bytes": int(fn.shared_size_bytes),
                             "time_us": float(np.median(us)), "p10_us": float(np.percentile(us, 10)),
                             "p90_us": float(np.percentile(us, 90)), "flops": flops, "bytes": rd + wr,
                             "bytes_read": rd, "bytes_written": wr, "l2": "flushed before each call"})
        del ws, nf, x, w, y
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _stage_times(cp, nf, xs, wts, ys, reps: int) -> list[float]:
    """Each non-fused kernel's time inside the pipeline: events between the four launches, in stage order."""
    calls = [stage_launches(nf, x, w, y) for x, w, y in zip(xs, wts, ys)]
    per = []
    for i in range(reps + 3):
        ev = [cp.cuda.Event() for _ in range(len(Op) + 1)]
        ev[0].record()
        for j, call in enumerate(calls[i % len(calls)]):
            _replay(call, stream=cp.cuda.get_current_stream())
            ev[j + 1].record()
        ev[-1].synchronize()
        if i >= 3:
            per.append([cp.cuda.get_elapsed_time(ev[j], ev[j + 1]) * 1e3 for j in range(len(Op))])
    return [float(v) for v in np.median(np.array(per), axis=0)]


def nonfused_reference(cp, graph, ws, xs, wts, ys, reps: int):
    """(kernels, output, graph-captured timing, each kernel's time in the pipeline) of the non-fused path: the
    reference every fused run of the graph is checked and timed against."""
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import time_launches
    nf = NonFusedConv(graph, workspace=ws)
    y_ref = cp.full_like(ys[0], cp.nan)
    nf.run(xs[0], wts[0], y_ref)
    for i in range(len(xs)):
        nf.capture(xs[i], wts[i], ys[i])
    nf_t = time_launches(cp, lambda i: nf.launch_graph(xs[i], wts[i], ys[i]), len(xs), reps)
    return nf, y_ref, nf_t, _stage_times(cp, nf, xs, wts, ys, reps)


def _trace_run(graph, layer, part, ws, xs, wts, ys) -> dict:
    """The per-block trace of the paper's default mapping, four launches in (warm caches, settled clocks)."""
    from megasim.gpu.megakernel import FusedConv
    mp = make(graph, "paper", **DEFAULT_PARAMS)
    traced = FusedConv(graph, mp, trace=True, workspace=ws)
    for i in range(4):
        traced.run(xs[i % len(xs)], wts[i % len(xs)], ys[i % len(xs)])
    recs = traced.trace_records()
    return {"layer": asdict(layer), "partition": part.to_dict(), "strategy": "paper",
            "params": dict(DEFAULT_PARAMS), "variant": 4,
            "records": [{f: rec[f].item() for f in recs.dtype.names} for rec in recs]}


def _layer_runs(cp, gpu: str, layer, reps: int, mismatches: list) -> tuple[list, dict | None]:
    """Every planned mapping of one layer, fused, against its graph-replayed non-fused time."""
    from megasim.app.catalog import partition_for
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.timing import rotation_inputs, time_launches
    part = partition_for(layer, gpu)
    graph = build_graph(layer, WinogradVariant(4), part)
    xs, wts, ys = rotation_inputs(cp, layer, 7)
    nsets = len(xs)
    ws = Workspace(graph)
    _, y_ref, nf_t, kernels = nonfused_reference(cp, graph, ws, xs, wts, ys, reps)
    plan = mapping_plan(graph)
    runs = []
    for (strategy, params, order), split in zip(plan, split_for(layer.name, len(plan))):
        fused = FusedConv(graph, order, workspace=ws)
        y_f = cp.full_like(ys[0], cp.nan)
        fused.run(xs[0], wts[0], y_f)
        if not bool((y_f == y_ref).all()):
            mismatches.append(f"{layer.name} {strategy} {params}")
        del y_f
        t = time_launches(cp, lambda i: fused.launch(xs[i], wts[i], ys[i]), nsets, reps)
        fused.check()
        runs.append(run_record(layer, 4, part, strategy, params, split, t, nf_t["median_us"], kernels))
    trace = _trace_run(graph, layer, part, ws, xs, wts, ys) if layer.name == TRACE_LAYER else None
    print(f"[runs] {layer.name}: {len(plan)} mappings, nf-graph {nf_t['median_us']:.1f} us", flush=True)
    return runs, trace


def measure_runs(gpu: str, reps: int = 20, layers=None, budget_s: float = 400.0):
    """(runs part, trace part) of the raw files on `gpu`'s partitions; layers past the budget are skipped, listed."""
    from megasim.app.catalog import layer_names, load_layer
    from megasim.gpu.backend import require_cupy
    cp = require_cupy()
    reps = max(20, reps)
    names = [load_layer(n).name for n in layer_names()]
    names = [n for n in names if layers is None or n in layers]
    t_start = time.perf_counter()
    runs, skipped, mismatches, per_layer_s, trace = [], [], [], {}, None
    for name in names:
        if time.perf_counter() - t_start > budget_s:
            skipped.append(name)
            continue
        t0 = time.perf_counter()
        layer_runs, layer_trace = _layer_runs(cp, gpu, load_layer(name), reps, mismatches)
        runs += layer_runs
        trace = layer_trace or trace
        per_layer_s[name] = round(time.perf_counter() - t0, 2)
        cp.get_default_memory_pool().free_all_blocks()
    extra = {"reps": reps, "rotation": "inputs rotated over sets > 2x L2 (gpu.timing.time_launches)",
             "fused_timing": "includes the control-word reset copy before each launch",
             "nonfused_timing": "graph replay; kernels timed by events between the four launches",
             "heldout_layers": list(HELDOUT_LAYERS), "skipped_layers": skipped,
             "bitwise_mismatches_vs_nonfused": mismatches, "seconds_per_layer": per_layer_s}
    return {"header_extra": extra, "runs": runs}, trace


__all__ = ["HELDOUT_LAYERS", "PAPER_GRID", "RUN_FIELDS", "mapping_plan", "split_for", "run_record",
           "check_runs_doc", "task_bytes", "stage_launches", "measure_tasks", "measure_runs"]
