"""Variants of the 3xTF32 GEMM body on the paper layers, beside the FFMA warp body and cuBLAS: time and accuracy.

    python3 docs/results/tensor_core/body_variants.py OUT [--reps 20] [--workers 15]   # a device

The body's knobs are compile-time: `MS_TF32X3_CHUNK` (8-channel steps the tensor cores sum from zero before one
FP32 add: fewer FP32 adds and a longer truncating chain; 2 by default), `MS_TF32X3_ROUND_SMALL` (round the small
part to TF32 too, one conversion more per element; off by default), `MS_TF32X3_SPLIT_CVT` (round the big part
with cvt.rna.tf32.f32, four instructions, instead of the two of bit arithmetic that give the same bits; off by
default), the launch bounds' blocks per SM
(`min_blocks`: 3 caps a 128-thread block at 168 registers, 2 at 255, 4 at 128) and a bigger block (128 tiles, 256
threads). For each paper layer at batch 64 in F(4x4) whose warp tiling fits, the non-fused FFMA build fills U and V;
each variant's GEMM kernel then runs on them alone (CUDA events, median of `reps`), its output is compared with
the float64 product of the same V and U, and the FFMA build's output transform turns it into y, compared with a
float64 cuDNN convolution, and a digest of its bits is kept (`m_digest`: variants that must agree bit for bit
can be checked). cuBLAS's strict-FP32 batched SGEMM runs on the same V and U. Every module is compiled
first, in `--workers` processes. Writes OUT/body_variants.json and prints a table.

    ncu --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio --section SpeedOfLight \
        --section ComputeWorkloadAnalysis -k ms_gemm_kernel \
        python3 docs/results/tensor_core/body_variants.py OUT --once vgg-3 ffma 3xtf32

runs each named variant's GEMM kernel once on one layer, for Nsight Compute: where its warps stall.
"""
import argparse
import hashlib
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure import builds, graph_of  # noqa: E402

BIG_BLOCK = {"tiles_per_group": 128, "threads": 256}
VARIANTS = {  # name: (precision, defines, min_blocks, partition changes)
    "ffma": ("fp32", {}, 0, {}),
    "3xtf32": ("3xtf32", {}, 0, {}),
    "cvt-split": ("3xtf32", {"MS_TF32X3_SPLIT_CVT": 1}, 0, {}),
    "chunk1": ("3xtf32", {"MS_TF32X3_CHUNK": 1}, 0, {}),
    "chunk4": ("3xtf32", {"MS_TF32X3_CHUNK": 4}, 0, {}),
    "round-small": ("3xtf32", {"MS_TF32X3_ROUND_SMALL": 1}, 0, {}),
    "chunk1-round-small": ("3xtf32", {"MS_TF32X3_CHUNK": 1, "MS_TF32X3_ROUND_SMALL": 1}, 0, {}),
    "mb2": ("3xtf32", {}, 2, {}),
    "mb4": ("3xtf32", {}, 4, {}),
    "ffma-t128": ("fp32", {}, 0, BIG_BLOCK),
    "3xtf32-t128": ("3xtf32", {}, 0, BIG_BLOCK),
}


def variant_graph(name: str, m: int, variant: str):
    """The layer's graph under the variant's partition: the scenario's, or a bigger block (128 tiles, 256
    threads: eight warps of 32 x 64, two ring stages)."""
    from dataclasses import replace
    from megasim.contract.graph import build_graph
    graph = graph_of(name, m)
    changes = VARIANTS[variant][3]
    return build_graph(graph.layer, graph.variant, replace(graph.partition, **changes)) if changes else graph


def source_and_options(name: str, m: int, variant: str):
    from dataclasses import replace
    from megasim.gpu.backend import COMPILE_OPTIONS, KERNEL_DIR, KernelConfig, kernel_source
    precision, defines, min_blocks, _ = VARIANTS[variant]
    cfg = replace(KernelConfig.of(variant_graph(name, m, variant), gemm="warp", precision=precision),
                  min_blocks=min_blocks)
    prefix = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    return prefix + kernel_source(cfg, ("nonfused.cu",)), COMPILE_OPTIONS + (f"-I{KERNEL_DIR}",)


def compile_one(args) -> str:
    import cupy as cp
    name, m, variant = args
    code, options = source_and_options(name, m, variant)
    cp.RawModule(code=code, options=options).compile()
    return f"{name} F{m} {variant}"


def measure_layer(cp, name: str, m: int, variants: list[str], reps: int) -> dict:
    from megasim.gpu.baselines import reference_fp64, rel_l2_error
    from megasim.gpu.launch import run_cupy
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs, time_launches
    graph = graph_of(name, m)
    layer = graph.layer
    xs, ws, ys = rotation_inputs(cp, layer, seed=7, nsets=1)
    ref = reference_fp64(layer, xs[0], ws[0])
    a2, tiles = graph.variant.alpha ** 2, graph.geometry.num_tiles
    flop = 2.0 * a2 * tiles * layer.c * layer.k
    wsp = Workspace(graph)
    nf = NonFusedConv(graph, workspace=wsp, gemm="warp")
    nf.run(xs[0], ws[0], ys[0])
    v3, u3 = wsp.V.reshape(a2, tiles, layer.c), wsp.U.reshape(a2, layer.c, layer.k)
    m64 = cp.matmul(v3.astype(cp.float64), u3.astype(cp.float64))
    output_step = [nf.steps()[3]]
    row = {"layer": name, "variant": m, "c": layer.c, "k": layer.k, "runs": {}}
    for variant in variants:
        code, options = source_and_options(name, m, variant)
        fn = cp.RawModule(code=code, options=options).get_function("ms_gemm_kernel")
        vg = variant_graph(name, m, variant)
        blocks, threads = vg.geometry.n_g * vg.geometry.s_g, vg.partition.threads

        def gemm(i):
            fn((blocks,), (threads,), (wsp.U, wsp.V, wsp.M))
        wsp.M.fill(float("nan"))
        gemm(0)
        gemm_err = rel_l2_error(wsp.M.reshape(a2, tiles, layer.k), m64)
        digest = hashlib.sha256(cp.asnumpy(wsp.M).tobytes()).hexdigest()[:16]
        ys[0].fill(float("nan"))
        run_cupy(output_step, xs[0], ws[0], ys[0], cp.cuda.get_current_stream())
        conv_err = rel_l2_error(ys[0], ref)
        us = time_launches(cp, gemm, 1, reps)["median_us"]
        attrs = fn.attributes
        row["runs"][variant] = {"gemm_us": us, "gemm_tflops": flop / us / 1e6, "gemm_rel_err": gemm_err,
                                "rel_err": conv_err, "registers": attrs.get("num_regs"),
                                "local_bytes": attrs.get("local_size_bytes"), "m_digest": digest}
    out = cp.empty((a2, tiles, layer.k), dtype=cp.float32)
    row["cublas_us"] = time_launches(cp, lambda i: cp.matmul(v3, u3, out=out), 1, reps)["median_us"]
    row["cublas_tflops"] = flop / row["cublas_us"] / 1e6
    return row


def run_once(name: str, variants: list[str]) -> int:
    import cupy as cp
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.nonfused import NonFusedConv
    from megasim.gpu.timing import rotation_inputs
    graph = graph_of(name, 4)
    xs, ws, ys = rotation_inputs(cp, graph.layer, seed=1, nsets=1)
    wsp = Workspace(graph)
    NonFusedConv(graph, workspace=wsp, gemm="warp").run(xs[0], ws[0], ys[0])
    for variant in variants:
        code, options = source_and_options(name, 4, variant)
        fn = cp.RawModule(code=code, options=options).get_function("ms_gemm_kernel")
        vg = variant_graph(name, 4, variant)
        fn((vg.geometry.n_g * vg.geometry.s_g,), (vg.partition.threads,), (wsp.U, wsp.V, wsp.M))
    cp.cuda.Device().synchronize()
    print("ran", name, *variants)
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--workers", type=int, default=15)
    p.add_argument("--layers", default="")
    p.add_argument("--variants", default="", help="comma-separated names of VARIANTS (default: all)")
    p.add_argument("--once", nargs="+", metavar="LAYER VARIANT", help="run these variants' GEMM once (for ncu)")
    args = p.parse_args()
    if args.once:
        return run_once(args.once[0], args.once[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",") if args.variants else list(VARIANTS)
    todo = builds([4])
    if args.layers:
        todo = [b for b in todo if b[0] in args.layers.split(",")]
    start = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        for done in pool.map(compile_one, [(n, m, v) for n, m in todo for v in variants]):
            print("compiled", done, flush=True)
    print(f"compiled {len(variants) * len(todo)} modules in {time.time() - start:.0f} s", flush=True)
    import cupy as cp
    from megasim.gpu.baselines import device_header
    rows = []
    doc = {"header": device_header(), "reps": args.reps,
           "variants": {k: dict(zip(("precision", "defines", "min_blocks", "partition"), v))
                        for k, v in VARIANTS.items()},
           "rows": rows}
    for name, m in todo:
        rows.append(measure_layer(cp, name, m, variants, args.reps))
        (args.out / "body_variants.json").write_text(json.dumps(doc, indent=1))
    print(f"{'layer':10} " + " ".join(f"{v:>17}" for v in variants) + f" {'cuBLAS':>7}")
    for r in rows:
        cells = [f"{r['runs'][v]['gemm_tflops']:5.1f}T {r['runs'][v]['rel_err']:.1e}/{r['runs'][v]['registers']}"
                 for v in variants]
        print(f"{r['layer']:10} " + " ".join(f"{c:>17}" for c in cells) + f" {r['cublas_tflops']:6.1f}T")
    if {"3xtf32", "cvt-split"} <= set(variants):
        same = sum(r["runs"]["3xtf32"]["m_digest"] == r["runs"]["cvt-split"]["m_digest"] for r in rows)
        print(f"3xtf32 and cvt-split GEMM outputs bit for bit equal on {same} of {len(rows)} layers")
    print(f"done in {time.time() - start:.0f} s (cells: GEMM TFLOP/s, convolution error vs float64 / registers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
