"""Input/output transforms with two items' loads in flight per thread, against today's, in the megakernel.

    python docs/results/xform_ilp_h200/xform_ilp.py OUT.json [--same-occupancy] [LAYER...]

The megakernel runs its transforms at the GEMM's occupancy (3-4 blocks of 128 threads per SM). Each
thread of a transform task already issues all of one item's loads at once; this study's copy of
winograd.cuh (beside this script) issues two items' loads before transforming either, using registers
the GEMM has reserved anyway. Per layer (F(4x4), H200 partition, paper mapping), both builds:
- fused static and persistent, median of 20 over rotated inputs;
- the trace build's mean task time per stage (end - ready), i.e. the megakernel's per-stage evidence;
- the non-fused input and output kernels alone;
- whether the outputs are bitwise equal.
With --same-occupancy the study build's launch bounds ask for today's megakernel occupancy, so the extra
registers cannot cost a resident block (without it, ptxas may take them and drop a block per SM).
"""
import json
import sys
from pathlib import Path

from dataclasses import replace

import numpy as np

import megasim.gpu.megakernel as mk
import megasim.gpu.nonfused as nf
from megasim.app.catalog import load_layer, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import OP_NAMES, Op, WinogradVariant
from megasim.gpu import backend
from megasim.gpu.backend import CompiledModule, kernel_source, measurement_header, require_cupy
from megasim.gpu.timing import rotation_inputs, time_launches

HERE = Path(__file__).resolve().parent
PATCHED = {"on": False, "same_occupancy": False}
_cache = {}


def patched_module(cfg):
    """backend.module, or with this folder's winograd.cuh first on the include path."""
    if not PATCHED["on"]:
        return backend.module(cfg)
    cp = require_cupy()
    if PATCHED["same_occupancy"] and not cfg.min_blocks:
        today = backend.module(cfg).function("ms_megakernel")
        cfg = replace(cfg, min_blocks=mk.device_blocks_per_sm(cp, today, cfg.partition.threads))
    key = cfg.shape_key()
    if key not in _cache:
        raw = cp.RawModule(code=kernel_source(cfg), options=backend.COMPILE_OPTIONS + (f"-I{HERE}", f"-I{backend.KERNEL_DIR}"))
        raw.compile()
        _cache[key] = CompiledModule(cfg, raw)
    return _cache[key]


mk.module = nf.module = patched_module


def one_build(cp, graph, mp, xs, wts, ys):
    out = {}
    for mode in ("static", "persistent"):
        conv = mk.FusedConv(graph, mp, mode=mode)
        y = cp.full_like(ys[0], cp.nan)
        conv.run(xs[0], wts[0], y)
        out[f"fused_{mode}_us"] = time_launches(cp, lambda i: conv.launch(xs[i], wts[i], ys[i]), len(xs), 20)["median_us"]
        out.setdefault("y", y)
    conv = mk.FusedConv(graph, mp, trace=True)
    conv.run(xs[0], wts[0], cp.empty_like(ys[0]))
    rec = conv.trace_records()
    out["trace_task_us"] = {OP_NAMES[op]: float(np.mean((rec["end_us"] - rec["ready_us"])[rec["op"] == op])) for op in Op}
    conv = nf.NonFusedConv(graph)
    conv.run(xs[0], wts[0], ys[0])
    g, ws, threads = graph.geometry, conv.ws, (graph.partition.threads,)
    fi, fo = conv.module.function("ms_input_kernel"), conv.module.function("ms_output_kernel")
    out["nonfused_input_us"] = time_launches(cp, lambda i: fi((g.n_g * g.s_i,), threads, (xs[i], ws.V)), len(xs), 20)["median_us"]
    out["nonfused_output_us"] = time_launches(cp, lambda i: fo((g.n_g * g.s_o,), threads, (ws.M, ys[i])), len(xs), 20)["median_us"]
    return out


def main(path, names):
    cp = require_cupy()
    rows = []
    for name in names:
        layer = load_layer(name)
        graph = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
        mp = make(graph, "paper")
        xs, wts, ys = rotation_inputs(cp, layer, 7)
        row = {"layer": name}
        for flag in (False, True):
            PATCHED["on"] = flag
            row["ilp2" if flag else "today"] = one_build(cp, graph, mp, xs, wts, ys)
        a, b = row["today"].pop("y"), row["ilp2"].pop("y")
        row["bitwise_equal"] = bool((a == b).all())
        rows.append(row)
        t, p = row["today"], row["ilp2"]
        print(f"{name:9} fused {t['fused_static_us']:8.1f} -> {p['fused_static_us']:8.1f}  pers {t['fused_persistent_us']:8.1f} -> "
              f"{p['fused_persistent_us']:8.1f}  in-task {t['trace_task_us']['input_transform']:6.2f} -> "
              f"{p['trace_task_us']['input_transform']:6.2f}  out-task {t['trace_task_us']['output_transform']:6.2f} -> "
              f"{p['trace_task_us']['output_transform']:6.2f}  nf in {t['nonfused_input_us']:6.1f} -> {p['nonfused_input_us']:6.1f}  "
              f"nf out {t['nonfused_output_us']:6.1f} -> {p['nonfused_output_us']:6.1f}  bit {row['bitwise_equal']}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    json.dump({"header": measurement_header(), "rows": rows}, open(path, "w"), indent=1)


if __name__ == "__main__":
    args = sys.argv[2:]
    if "--same-occupancy" in args:
        PATCHED["same_occupancy"] = True
        args.remove("--same-occupancy")
    main(sys.argv[1], args or ["DenseNet", "ResNet-1", "ResNet-2", "ResNet-3", "VGG-1", "VGG-2", "YOLOv3-2", "YOLOv3-4"])
