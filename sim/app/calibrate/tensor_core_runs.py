"""Stage 5's input measured on the GPU at hand: the 3xTF32 GEMM body beside its FFMA twin, `<gpu>_tensor_core.json`.

For each paper layer whose warp tiling fits at this GPU's partition (the 3xTF32 body runs only there) and each
Winograd variant, both precisions of the warp body are timed three ways: the GEMM kernel alone, the non-fused
convolution (its four kernels as one CUDA graph) and the fused one (static, the paper's mapping), inputs rotated
past L2; and cuBLAS's strict-FP32 batched SGEMM on the same V and U. The `tensor_core_gemm` law is fitted on the
3xTF32 gain over the FP32 twin (`tensor_law`), so the twins are timed side by side, on the same inputs. Each row
also records its accuracy (the GEMM's and the convolution's relative L2 error against float64) and whether the
fused and non-fused outputs agree bit for bit. The file is rewritten after each row, so a run stopped by its
budget or killed continues where it stopped.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

VARIANTS = (2, 4, 6)


def tensor_builds(gpu: str, layers=None, variants=VARIANTS) -> list[tuple[str, int]]:
    """(layer, variant) pairs whose 3xTF32 warp build compiles at `gpu`'s partition."""
    from megasim.app.catalog import layer_names, load_layer, partition_for
    from megasim.contract.errors import MegasimError
    from megasim.contract.resources import check_kernel_build, gemm_warp_tiled, warp_partition
    out = []
    for name in [load_layer(n).name for n in (layers or layer_names()[:13])]:
        layer = load_layer(name)
        part = warp_partition(layer, partition_for(layer, gpu))
        if not gemm_warp_tiled(layer, part):
            continue
        for m in variants:
            try:
                check_kernel_build(layer, part, "warp", precision="3xtf32")
            except MegasimError:
                continue
            out.append((name, m))
    return out


def _graph(gpu: str, name: str, m: int):
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import WinogradVariant
    from megasim.contract.resources import warp_partition
    layer = load_layer(name)
    return build_graph(layer, WinogradVariant(m), warp_partition(layer, partition_for(layer, gpu)))


def _compile(job) -> str:
    """Both modules of one (layer, variant, precision) into CuPy's disk cache."""
    gpu, name, m, precision = job
    from megasim.gpu.backend import KernelConfig, module
    from megasim.gpu.megakernel import fused_module
    graph = _graph(gpu, name, m)
    module(KernelConfig.of(graph, gemm="warp", precision=precision))
    fused_module(graph, "static", gemm="warp", precision=precision)
    return f"{name} F{m} {precision}"


def measure_row(cp, gpu: str, name: str, m: int, reps: int) -> dict:
    """One layer and variant, both precisions, as the module docstring says."""
    from megasim.contract.mapping import make
    from megasim.gpu.baselines import reference_fp64, rel_l2_error
    from megasim.gpu.launch import run_cupy
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs, time_launches
    graph = _graph(gpu, name, m)
    layer, geo = graph.layer, graph.geometry
    xs, ws, ys = rotation_inputs(cp, layer, seed=7, max_sets=4)
    ref = reference_fp64(layer, xs[0], ws[0])
    a2, tiles = graph.variant.alpha ** 2, geo.num_tiles
    flop = 2.0 * a2 * tiles * layer.c * layer.k
    row = {"layer": name, "variant": m, "partition": graph.partition.to_dict(), "rotation_sets": len(xs)}
    wsp = Workspace(graph)
    outputs = {}
    for precision in ("fp32", "3xtf32"):
        nf = NonFusedConv(graph, workspace=wsp, gemm="warp", precision=precision)
        fc = FusedConv(graph, make(graph, "paper"), mode="static", gemm="warp", precision=precision, workspace=wsp)
        nf.run(xs[0], ws[0], ys[0])
        v3, u3 = wsp.V.reshape(a2, tiles, layer.c), wsp.U.reshape(a2, layer.c, layer.k)
        m64 = cp.matmul(v3.astype(cp.float64), u3.astype(cp.float64))
        gemm_err = rel_l2_error(wsp.M.reshape(a2, tiles, layer.k), m64)
        del m64
        y_nf = ys[0].copy()
        fc.launch(xs[0], ws[0], ys[0])
        cp.cuda.get_current_stream().synchronize()
        fc.check()
        y_fc = ys[0].copy()
        gemm_step = [nf.steps()[2]]
        t_gemm = time_launches(cp, lambda i: run_cupy(gemm_step, xs[0], ws[0], ys[0], cp.cuda.get_current_stream()),
                               1, reps)["median_us"]
        t_nf = time_launches(cp, lambda i: nf.launch_graph(xs[i], ws[i], ys[i]), len(xs), reps)["median_us"]
        t_fc = time_launches(cp, lambda i: fc.launch(xs[i], ws[i], ys[i]), len(xs), reps)["median_us"]
        row[precision] = {"gemm_us": t_gemm, "gemm_tflops": flop / t_gemm / 1e6, "gemm_rel_err": gemm_err,
                          "nonfused_us": t_nf, "fused_us": t_fc, "rel_err": rel_l2_error(y_fc, ref),
                          "fused_equals_nonfused": bool(cp.array_equal(y_nf, y_fc))}
        outputs[precision] = y_fc
        nf.graphs.clear()
        del nf, fc
    v3, u3 = wsp.V.reshape(a2, tiles, layer.c), wsp.U.reshape(a2, layer.c, layer.k)
    out = cp.empty((a2, tiles, layer.k), dtype=cp.float32)
    row["cublas_us"] = time_launches(cp, lambda i: cp.matmul(v3, u3, out=out), 1, reps)["median_us"]
    row["cublas_tflops"] = flop / row["cublas_us"] / 1e6
    row["precisions_differ"] = not bool(cp.array_equal(outputs["fp32"], outputs["3xtf32"]))
    cp.get_default_memory_pool().free_all_blocks()
    return row


def measure_tensor_core(gpu: str, path, reps: int = 20, layers=None, budget_s: float = 600.0, log=print,
                        variants=VARIANTS, workers: int | None = None) -> dict:
    """Time the (layer, variant) rows not yet in `path`, until `budget_s` runs out; returns the counts done and
    left. Every build left is compiled first, in parallel."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
    from megasim.app.catalog import load_layer
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.baselines import device_header
    from megasim.io.files import read_json
    from megasim.io.writing import write_then_rename
    path = Path(path)
    doc = read_json(path) if path.exists() else {"header": device_header(), "reps": reps,
                                                 "source": "megasim calibrate (tensor_core_runs)", "rows": []}
    done = {(load_layer(r["layer"]).name, r["variant"]) for r in doc["rows"]}  # a row may name the layer's file
    todo = [b for b in tensor_builds(gpu, layers, variants) if b not in done]
    t0 = time.perf_counter()
    workers = workers or min(16, os.cpu_count() or 1)
    if todo and workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            list(pool.map(_compile, [(gpu, n, m, p) for n, m in todo for p in ("fp32", "3xtf32")]))
        log(f"[tensor_core] compiled {2 * len(todo)} builds in {time.perf_counter() - t0:.0f} s")
    cp = require_cupy() if todo else None
    finished = 0
    for name, m in todo:
        if time.perf_counter() - t0 > budget_s:
            break
        row = measure_row(cp, gpu, name, m, reps)
        row["split"] = "heldout" if name in HELDOUT_LAYERS else "train"
        doc["rows"].append(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        with write_then_rename(path) as tmp:
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
        finished += 1
        f, t = row["fp32"], row["3xtf32"]
        log(f"[tensor_core] {name} F{m}: GEMM {f['gemm_us']:.0f} -> {t['gemm_us']:.0f} us, non-fused "
            f"{f['nonfused_us']:.0f} -> {t['nonfused_us']:.0f}, fused {f['fused_us']:.0f} -> {t['fused_us']:.0f}, "
            f"err {f['rel_err']:.1e} -> {t['rel_err']:.1e} ({time.perf_counter() - t0:.0f} s)")
    return {"done": len(done) + finished, "left": len(todo) - finished}


__all__ = ["VARIANTS", "measure_row", "measure_tensor_core", "tensor_builds"]
