"""The 3xTF32 GEMM body on the paper layers, measured beside the FFMA warp body and cuBLAS: time and accuracy.

    python docs/results/tensor_core/measure.py OUT [--variants 4] [--reps 20] [--workers 15]   # a device
    python docs/results/tensor_core/measure.py scenarios/calibrations/raw                      # the committed rows

For each paper layer at batch 64 whose warp tiling fits (the 3xTF32 body runs on it), each Winograd variant of
`--variants`, and each precision (`fp32`: the warp body's FFMA; `3xtf32`: gpu/kernels/gemm_tf32x3.cuh):
- the GEMM kernel alone (the non-fused GEMM kernel, CUDA events, median of `reps`), its effective TFLOP/s
  (2 x alpha^2 x tiles x C x K per call) and its output's relative L2 error against the float64 product of the
  same V and U;
- cuBLAS's strict-FP32 strided-batched SGEMM on the same V and U (`cupy.matmul` of alpha^2 batched matrices,
  CuPy's default math mode: no TF32);
- the whole convolution, non-fused (its four kernels as one CUDA graph) and fused (static, the paper's
  mapping), inputs rotated past L2, and the fused output's relative L2 error against a float64 cuDNN
  convolution; the fused and non-fused outputs must be bit for bit equal within a precision.
Every build is compiled first, in `--workers` processes. Writes OUT/h200_tensor_core.json, the raw file
`megasim calibrate` fits the `tensor_core_gemm` law on (its stage 5), and prints a table beside the committed
prediction (predicted_3xtf32.json).
"""
import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


def builds(variants) -> list[tuple]:
    from megasim.app.catalog import layer_names, load_layer, partition_for
    from megasim.contract.errors import MegasimError
    from megasim.contract.resources import check_kernel_build, gemm_warp_tiled, warp_partition
    out = []
    for name in layer_names()[:13]:
        layer = load_layer(name)
        part = warp_partition(layer, partition_for(layer, "h200"))
        if not gemm_warp_tiled(layer, part):
            continue
        for m in variants:
            try:
                check_kernel_build(layer, part, "warp", precision="3xtf32")
            except MegasimError:
                continue
            out.append((name, m))
    return out


def graph_of(name: str, m: int):
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.graph import build_graph
    from megasim.contract.problem import WinogradVariant
    from megasim.contract.resources import warp_partition
    layer = load_layer(name)
    return build_graph(layer, WinogradVariant(m), warp_partition(layer, partition_for(layer, "h200")))


def compile_one(args) -> str:
    """Both modules of one (layer, variant, precision) into CuPy's disk cache."""
    name, m, precision = args
    from megasim.gpu.backend import KernelConfig, module
    from megasim.gpu.megakernel import fused_module
    graph = graph_of(name, m)
    module(KernelConfig.of(graph, gemm="warp", precision=precision))
    fused_module(graph, "static", gemm="warp", precision=precision)
    return f"{name} F{m} {precision}"


def measure_one(cp, name: str, m: int, reps: int) -> dict:
    from megasim.contract.mapping import make
    from megasim.gpu.baselines import reference_fp64, rel_l2_error
    from megasim.gpu.launch import run_cupy
    from megasim.gpu.megakernel import FusedConv, Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs, time_launches
    graph = graph_of(name, m)
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
        v3 = wsp.V.reshape(a2, tiles, layer.c)
        u3 = wsp.U.reshape(a2, layer.c, layer.k)
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
    return row


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--variants", default="4", help="comma-separated Winograd variants (2, 4, 6)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--workers", type=int, default=15)
    p.add_argument("--layers", default="", help="comma-separated layer names (default: every paper layer that fits)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = builds([int(v) for v in args.variants.split(",")])
    if args.layers:
        todo = [b for b in todo if b[0] in args.layers.split(",")]
    start = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        for done in pool.map(compile_one, [(n, m, p) for n, m in todo for p in ("fp32", "3xtf32")]):
            print("compiled", done, flush=True)
    print(f"compiled {2 * len(todo)} builds in {time.time() - start:.0f} s", flush=True)
    import cupy as cp
    from megasim.gpu.baselines import device_header
    predicted = {(r["layer"], r["variant"]): r for r in json.loads((HERE / "predicted_3xtf32.json").read_text())["rows"]}
    rows = []
    doc = {"header": device_header(), "reps": args.reps, "rows": rows}
    for name, m in todo:
        row = measure_one(cp, name, m, args.reps)
        pred = predicted.get((name, m), {})
        row["predicted"] = {k: pred.get(k) for k in ("gemm_fp32_us", "gemm_3xtf32_us", "nonfused_fp32_us",
                                                     "nonfused_3xtf32_us", "fused_fp32_us", "fused_3xtf32_us")}
        rows.append(row)
        (args.out / "h200_tensor_core.json").write_text(json.dumps(doc, indent=1))
        f, t = row["fp32"], row["3xtf32"]
        print(f"{name} F{m}: GEMM {f['gemm_us']:.0f} -> {t['gemm_us']:.0f} us ({t['gemm_tflops']:.0f} TFLOP/s, "
              f"cuBLAS {row['cublas_tflops']:.0f}), non-fused {f['nonfused_us']:.0f} -> {t['nonfused_us']:.0f}, "
              f"fused {f['fused_us']:.0f} -> {t['fused_us']:.0f}, err {f['rel_err']:.1e} -> {t['rel_err']:.1e} "
              f"(GEMM {f['gemm_rel_err']:.1e} -> {t['gemm_rel_err']:.1e}), same bits fused/non-fused "
              f"{f['fused_equals_nonfused']}/{t['fused_equals_nonfused']}", flush=True)
    print(f"done in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
