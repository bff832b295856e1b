"""Why a lone input-transform block is slower in the megakernel than in its own kernel (session 13, item 2).

    python3 docs/results/fidelity_v2/session13/lone_input.py OUT_DIR      (on an H200; CuPy, NumPy, nvcc)

ResNet-1's build (the trace sample's partition). The same `ms_input_task` is wrapped in small kernels that each
add one thing the megakernel has and the non-fused input kernel has not, and each block's work (thread 0's
%globaltimer after a barrier before and after the task) is read at 1, 2 and 3 blocks per SM, the L2 flushed
before every launch:

- own: the non-fused kernel's body;
- fence: every thread's `__threadfence()` after the task (the megakernel's end);
- smem58 / smem100: 27,696 bytes of dynamic shared memory (the GEMM's tiles) and a shared-memory carveout of 58%
  or 100%, so the SM keeps less L1;
- switch: the megakernel's code shape, a switch over all four task bodies on an op read from memory, so the
  input case is compiled beside the GEMM (and its static shared memory);
- spin_acquire / spin_relaxed: 128 input blocks, one per SM, with three blocks per SM polling a counter they
  count down beside them, as the GEMMs behind D_IG = 128 do (`ms_wait`), by acquire or by relaxed loads;
- megakernel: the megakernel itself under D_IG = 128, its first 128 input transforms (one per SM), traced.

Also the SASS of the input kernel and the megakernel (cuobjdump), for the loop's loads. Writes lone_input.json,
the SASS files and a table.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cupy as cp
import numpy as np

from megasim.app.calibrate.trace_law import graph_of, load_sample
from megasim.contract.mapping import make
from megasim.contract.problem import Op
from megasim.gpu.backend import COMPILE_OPTIONS, KERNEL_DIR, KernelConfig, kernel_source
from megasim.gpu.megakernel import FusedConv, Workspace

EXTRA = r"""
__device__ __forceinline__ unsigned long long li_now() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
#define LI_OPEN  __shared__ unsigned long long li_t0; if (threadIdx.x == 0) li_t0 = li_now(); __syncthreads();
#define LI_CLOSE __syncthreads(); if (threadIdx.x == 0) { t[2 * blockIdx.x] = li_t0; t[2 * blockIdx.x + 1] = li_now(); }
extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
li_own(const float* __restrict__ x, float* V, unsigned long long* t) {
    LI_OPEN ms_input_task(x, V, blockIdx.x / MS_SI, blockIdx.x % MS_SI); LI_CLOSE
}
extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
li_fence(const float* __restrict__ x, float* V, unsigned long long* t) {
    LI_OPEN ms_input_task(x, V, blockIdx.x / MS_SI, blockIdx.x % MS_SI); __threadfence(); LI_CLOSE
}
extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
li_smem(const float* __restrict__ x, float* V, unsigned long long* t) {
    extern __shared__ float li_pad[];
    li_pad[threadIdx.x] = 0.0f;
    LI_OPEN ms_input_task(x, V, blockIdx.x / MS_SI, blockIdx.x % MS_SI); LI_CLOSE
    if (li_pad[(threadIdx.x + 1) % MS_NT] != 0.0f) V[0] = 1.0f;
}
extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
li_switch(const float* __restrict__ x, const float* __restrict__ w, float* U, float* V, float* Mb,
          float* __restrict__ y, const int* __restrict__ ops, unsigned long long* t) {
    LI_OPEN
    const int b = blockIdx.x;
    switch (ops[b]) {
        case MS_OP_FILTER_TRANSFORM: ms_filter_task(w, U, b); break;
        case MS_OP_INPUT_TRANSFORM: ms_input_task(x, V, b / MS_SI, b % MS_SI); break;
        case MS_OP_GEMM: ms_gemm_task(U, V, Mb, b / MS_SG, b % MS_SG); break;
        case MS_OP_OUTPUT_TRANSFORM: ms_output_task(Mb, y, b / MS_SO, b % MS_SO); break;
        default: break;
    }
    LI_CLOSE
}
__device__ __forceinline__ int li_load(const int* p, bool acquire) {
    int v;
    if (acquire) asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    else asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// The first n_in blocks (one per SM) transform inputs; the rest spin, as GEMMs behind D_IG do, on a counter
// the input blocks count down: two loads a poll (the counter and the error word), sleeping 32 ns doubling to 1 us.
extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS)
li_spin(const float* __restrict__ x, float* V, unsigned long long* t, int* cnt, int n_in, int acquire) {
    if (blockIdx.x < n_in) {
        LI_OPEN ms_input_task(x, V, blockIdx.x / MS_SI, blockIdx.x % MS_SI); LI_CLOSE
        if (threadIdx.x == 0) { __threadfence(); atomicSub(cnt, 1); }
        return;
    }
    if (threadIdx.x == 0) {
        unsigned sleep_ns = 32;
        while (li_load(cnt, acquire) > 0) {
            if (li_load(cnt + 1, acquire) != 0) break;
            __nanosleep(sleep_ns);
            sleep_ns = sleep_ns < 1024 ? 2 * sleep_ns : 1024;
        }
    }
    __syncthreads();
}
"""
SMEM = 27696
REPS = 10


def sass(source: str, out: Path) -> dict:
    """cuobjdump's SASS of the input kernel and the megakernel, and counts of the instructions that matter."""
    cu = out / "build.cu"
    cu.write_text(source)
    opts = [o for o in COMPILE_OPTIONS] + [f"-I{KERNEL_DIR}", "-arch=sm_90", "-cubin", "-o", str(out / "build.cubin")]
    subprocess.run(["nvcc", *opts, str(cu)], check=True, capture_output=True)
    counts = {}
    for fn in ("ms_input_kernel", "li_switch", "ms_megakernel"):
        text = subprocess.run(["cuobjdump", "-sass", "-fun", fn, str(out / "build.cubin")], check=True,
                              capture_output=True, text=True).stdout
        (out / f"sass_{fn}.txt").write_text(text)
        counts[fn] = {k: text.count(k) for k in ("LDG", "STG", "CCTL", "MEMBAR", "ERRBAR", "BAR.SYNC", "FFMA")}
    return counts


def summary(work) -> dict:
    return {"median_us": float(np.median(work)), "p10_us": float(np.percentile(work, 10)),
            "p90_us": float(np.percentile(work, 90))}


def megakernel_head(g, ws, x, wts, y, flush, launches: int = 4) -> tuple[list, list]:
    """The megakernel under D_IG = 128, traced `launches` times (the first discarded): per launch, the work (ready
    to end, us) and the SM of each of its first 128 input transforms."""
    fused = FusedConv(g, make(g, "paper", dig=128, dgo=512, m=4), trace=True, workspace=ws)
    i0 = g.geometry.first_task(Op.INPUT_TRANSFORM)
    heads, sms = [], []
    for rep in range(launches):
        flush.fill(rep)
        fused.run(x, wts, y)
        if rep >= 1:
            rec = fused.trace_records()
            head = (rec["op"] == Op.INPUT_TRANSFORM) & (rec["task"] - i0 < 128)
            heads.append(rec["end_us"][head] - rec["ready_us"][head])
            sms.append(np.asarray(rec["sm"][head], dtype=np.int64))
    return heads, sms


def block_work(fn, grid, args, t, flush, smem=0) -> np.ndarray:
    out = []
    for rep in range(REPS + 2):
        flush.fill(rep)
        t.fill(0)
        fn((grid,), (128,), args, shared_mem=smem)
        cp.cuda.Device().synchronize()
        if rep >= 2:
            raw = t.get().reshape(-1, 2)[:grid]
            out.append((raw[:, 1] - raw[:, 0]) / 1000.0)
    return np.concatenate(out)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    meta, _ = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    g = graph_of(meta["ResNet-1-dig128"])
    cfg = KernelConfig.of(g)
    source = kernel_source(cfg) + EXTRA
    result = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sass": sass(source, out)}
    mod = cp.RawModule(code=source, options=COMPILE_OPTIONS + (f"-I{KERNEL_DIR}",))
    geo = g.geometry
    n, c, h, w = g.layer.n, g.layer.c, g.layer.h, g.layer.w
    x = cp.random.standard_normal(n * h * w * c, dtype=cp.float32)
    wts = cp.random.standard_normal(g.layer.k * c * 9, dtype=cp.float32)
    ws = Workspace(g)
    y = cp.zeros(n * g.layer.k * h * w, dtype=cp.float32)
    t = cp.zeros(2 * 1024, dtype=cp.uint64)
    flush = cp.zeros(64 * 1024 * 1024, dtype=cp.float32)  # 256 MB, past the 60 MB L2
    ops = cp.full(1024, int(Op.INPUT_TRANSFORM), dtype=cp.int32)
    variants = {"own": ("li_own", (x, ws.V, t), 0, None), "fence": ("li_fence", (x, ws.V, t), 0, None),
                "smem58": ("li_smem", (x, ws.V, t), SMEM, 58), "smem100": ("li_smem", (x, ws.V, t), SMEM, 100),
                "switch": ("li_switch", (x, wts, ws.U, ws.V, ws.M, y, ops, t), 0, None)}
    rows = {}
    for name, (fn_name, args, smem, carveout) in variants.items():
        fn = mod.get_function(fn_name)
        if smem:
            fn.max_dynamic_shared_size_bytes = smem
        if carveout is not None:
            fn.preferred_shared_memory_carveout = carveout
        for grid in (128, 264, geo.n_g * geo.s_i):
            work = block_work(fn, grid, args, t, flush, smem)
            rows[f"{name}/{grid}"] = summary(work)
            print(f"{name:10s} {grid:4d} blocks: median {np.median(work):6.2f} us", flush=True)
    cnt = cp.zeros(2, dtype=cp.int32)
    spin = mod.get_function("li_spin")
    for name, acquire in (("spin_acquire", 1), ("spin_relaxed", 0)):
        work = []
        for rep in range(REPS + 2):
            flush.fill(rep)
            t.fill(0)
            cnt[0] = 128
            spin((128 + 3 * 132,), (128,), (x, ws.V, t, cnt, np.int32(128), np.int32(acquire)))
            cp.cuda.Device().synchronize()
            if rep >= 2:
                raw = t.get().reshape(-1, 2)[:128]
                work.append((raw[:, 1] - raw[:, 0]) / 1000.0)
        work = np.concatenate(work)
        rows[f"{name}/128"] = summary(work)
        print(f"{name:12s} 128 blocks + 396 spinning: median {np.median(work):6.2f} us", flush=True)
    work = np.concatenate(megakernel_head(g, ws, x, wts, y, flush)[0])
    rows["megakernel/head128"] = summary(work)
    print(f"megakernel head 128: median {np.median(work):6.2f} us", flush=True)
    result["rows"] = rows
    (out / "lone_input.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result["sass"], indent=1))
    print("| variant | 128 blocks (1/SM) | 264 (2/SM) | 392 (3/SM) |\n|---|---|---|---|")
    for name in variants:
        print(f"| {name} | " + " | ".join(f"{rows[f'{name}/{k}']['median_us']:.1f}" for k in (128, 264, geo.n_g * geo.s_i)) + " |")
    for name in ("spin_acquire", "spin_relaxed"):
        print(f"| {name}: 3 blocks per SM polling beside | {rows[f'{name}/128']['median_us']:.1f} | | |")
    print(f"| megakernel, D_IG 128 head | {rows['megakernel/head128']['median_us']:.1f} | | |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
