"""The warp-tiled GEMM inside the kernels: every paper layer at its table partition and, where K >= 128,
at 128 output channels per GEMM task (the shape the GEMM study found best).

    python docs/results/bench_h200/warp_gemm/adopt.py OUT.json

Per layer and partition: `bench_layer` without baselines or other variants (F(4x4), paper default
mapping, median of 20, rotated inputs): fused in each mode, non-fused (each kernel alone and
graph-captured), the relative error against float64 and the bitwise checks, plus whether the build
compiled the warp-tiled GEMM. Prints a table last.
"""
import json
import sys
from argparse import Namespace
from dataclasses import replace

from megasim.app.bench import bench_layer
from megasim.app.catalog import layer_names, load_layer, partition_for
from megasim.contract.resources import gemm_warp_tiled
from megasim.contract.graph import build_graph
from megasim.contract.problem import WinogradVariant
from megasim.gpu.backend import measurement_header, require_cupy
from megasim.gpu.nonfused import NonFusedConv
from megasim.gpu.timing import rotation_inputs, time_launches


def gemm_alone_us(cp, layer, part) -> float:
    """The non-fused GEMM kernel alone on the graph's real U and V (one non-fused run fills them)."""
    graph = build_graph(layer, WinogradVariant(4), part)
    xs, wts, ys = rotation_inputs(cp, layer, 3)
    conv = NonFusedConv(graph)
    conv.run(xs[0], wts[0], ys[0])
    g, ws = graph.geometry, conv.ws
    fn = conv.module.function("ms_gemm_kernel")
    launch = lambda i: fn((g.n_g * g.s_g,), (part.threads,), (ws.U, ws.V, ws.M))  # noqa: E731
    return time_launches(cp, launch, 1, 20)["median_us"]


def gemm_flops(layer) -> float:
    """2 x 36 points x tiles x C x K (F(4x4)): the Winograd GEMMs' FLOPs."""
    tiles = layer.n * -(-layer.h // 4) * -(-layer.w // 4)
    return 2.0 * 36 * tiles * layer.c * layer.k


def candidates(layer):
    table = partition_for(layer, "h200")
    out = [table]
    if layer.k >= 128 and table.gemm_k_per_task != 128:
        out.append(replace(table, gemm_k_per_task=128))
    return out


def main(path):
    cp = require_cupy()
    rows = []
    for name in layer_names()[:13]:
        layer = load_layer(name)
        for part in candidates(layer):
            args = Namespace(strategy="paper", mapping=None, partition=None, reps=20, variant=4, opt=[], seed=None)
            e = bench_layer(layer, args, 4.0e12, partition=part, baselines=False, raw_blockidx=False, space=False)
            t = e["timings"]
            rows.append({"layer": name, "partition": part.to_dict(), "warp_gemm": gemm_warp_tiled(layer, part),
                         "entry": e})
            nf = gemm_alone_us(cp, layer, part)
            rows[-1]["gemm_alone_us"] = nf
            rows[-1]["gemm_tflops"] = gemm_flops(layer) / nf / 1e6
            print(f"{name:9} k{part.gemm_k_per_task:<4} warp {int(rows[-1]['warp_gemm'])} "
                  f"static {t['fused']['median_us']:8.1f} pers {t['fused-persistent']['median_us']:8.1f} "
                  f"rq {t['fused-ready_queue']['median_us']:8.1f} nf-graph {t['nonfused-graph']['median_us']:8.1f} "
                  f"gemm {nf:7.1f} ({rows[-1]['gemm_tflops']:.1f} TF) err {e['checks']['fused']['rel_err']:.1e} bit {e['fused_equals_nonfused_bitwise']} "
                  f"modes {e['modes_bitwise_equal']}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    json.dump({"header": measurement_header(), "rows": rows}, open(path, "w"), indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
