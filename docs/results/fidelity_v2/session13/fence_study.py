"""What the megakernel's acquire polls and per-thread end fences cost (session 13, item 2), as a study build.

    python3 docs/results/fidelity_v2/session13/fence_study.py OUT_DIR      (on an H200)

Every `ld.acquire.gpu` and every `__threadfence()` compiles to an invalidation of the SM's whole L1
(`CCTL.IVALL`; the fence also to `MEMBAR.SC.GPU`), and the megakernel issues them in each poll of a waiting block
and in every thread at the end of every task. `lone_input.py` measured one lone input block 11% slower beside three
blocks polling by acquire loads than beside three polling by relaxed ones. Here the megakernel's source is patched
in memory, never in gpu/kernels (so no committed build changes):

- relaxed: polls by `ld.relaxed.gpu`; the fence thread 0 already issues after its waits gives the acquire;
- relaxed+one_fence: also the end-of-task fence by thread 0 alone after the barrier, before its atomic (the
  release pattern cooperative groups' grid sync uses), instead of by every thread before it.

Per case (the trace sample's problem and mapping): the fused time (CUDA events, median of 30, three rotated input
sets), the output against the unpatched build's, and for ResNet-1 under D_IG = 128 the traced head inputs' work.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

import megasim.gpu.backend as backend
from megasim.app.calibrate.trace_law import graph_of, load_sample
from megasim.contract.mapping import make
from megasim.contract.problem import Op
from megasim.gpu.megakernel import FusedConv, Workspace
from megasim.gpu.timing import time_launches

CASES = ("ResNet-1-dig128", "ResNet-1", "ResNet-2", "ResNet-4", "YOLOv3-5", "VGG-3", "gen-n4c640h7w7k640-f4")
POLL = ('asm volatile("ld.acquire.gpu.global.b32 %0, [%1];"', 'asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];"')
END = ("    __threadfence();\n    __syncthreads();\n    if (threadIdx.x == 0) {\n        const int signal",
       "    __syncthreads();\n    if (threadIdx.x == 0) {\n        __threadfence();\n        const int signal")
PATCHES = {"original": (), "relaxed": (POLL,), "relaxed+one_fence": (POLL, END)}
_source = backend.kernel_source


def use(patches) -> None:
    def patched(cfg, sources=backend.SOURCES):
        text = _source(cfg, sources)
        for old, new in patches:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        return text
    backend.kernel_source = patched
    backend._CACHE.clear()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    meta, _ = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    rows = {}
    for case in CASES:
        about = meta[case]
        g = graph_of(about)
        mapping = make(g, about["strategy"], **about.get("params", {}))
        n, c, h, w, k = (g.layer.n, g.layer.c, g.layer.h, g.layer.w, g.layer.k)
        rng = np.random.default_rng(0)
        xs = [cp.asarray(rng.standard_normal(n * h * w * c, dtype=np.float32)) for _ in range(3)]
        wts = [cp.asarray(rng.standard_normal(k * c * 9, dtype=np.float32)) for _ in range(3)]
        ys = [cp.full(n * k * h * w, np.nan, dtype=cp.float32) for _ in range(3)]
        ws = Workspace(g)
        ref = None
        for name, patches in PATCHES.items():
            use(patches)
            conv = FusedConv(g, mapping, workspace=ws)
            conv.run(xs[0], wts[0], ys[0])
            y0 = ys[0].get()
            if ref is None:
                ref = y0
            t = time_launches(cp, lambda i: conv.launch(xs[i], wts[i], ys[i]), 3, 30)
            conv.check()
            row = {"fused_us": t["median_us"], "p10_us": t["p10_us"], "p90_us": t["p90_us"],
                   "max_abs_diff_vs_original": float(np.nanmax(np.abs(y0 - ref))), "nan": int(np.isnan(y0).sum())}
            if case == "ResNet-1-dig128":
                traced = FusedConv(g, mapping, trace=True, workspace=ws)
                heads = []
                for rep in range(4):
                    traced.run(xs[rep % 3], wts[rep % 3], ys[rep % 3])
                    if rep:
                        rec = traced.trace_records()
                        head = (rec["op"] == Op.INPUT_TRANSFORM) & (rec["task"] - g.geometry.first_task(Op.INPUT_TRANSFORM) < 128)
                        heads.append(rec["end_us"][head] - rec["ready_us"][head])
                row["head_input_work_us"] = float(np.median(np.concatenate(heads)))
            rows[f"{case}/{name}"] = row
            print(f"{case:26s} {name:18s} {t['median_us']:8.1f} us  diff {row['max_abs_diff_vs_original']:.1e}"
                  + (f"  head inputs {row['head_input_work_us']:.1f} us" if "head_input_work_us" in row else ""), flush=True)
    use(())
    (out / "fence_study.json").write_text(json.dumps(rows, indent=1))
    print("| case | original (us) | relaxed polls | + one end fence | change |\n|---|---|---|---|---|")
    for case in CASES:
        a, b, c2 = (rows[f"{case}/{p}"]["fused_us"] for p in PATCHES)
        print(f"| {case} | {a:.1f} | {b:.1f} | {c2:.1f} | {c2 / a - 1:+.1%} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
