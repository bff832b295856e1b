"""Do the megakernel's costs around a lone input block add up to its head time? (session 14, item 5)

    python3 docs/results/fidelity_v2/session14/combined.py OUT_DIR      (on an H200, after .ci/device_site.sh)

Session 13's `lone_input.py` added one megakernel feature at a time to a small kernel around `ms_input_task`
(ResNet-1's build) and found each worth 0-3 us against a head block's 10 us gap. This runs them together, in one
launch like the megakernel's head: 128 blocks, one per SM, each taking a ticket and its op from a task map and
running the megakernel's switch over all four bodies (the GEMM's static shared memory compiled in), with 396
blocks polling beside them by acquire loads, and every thread fencing at the end. Beside it, in the same call,
the small kernel of the input body alone and the megakernel's own head (D_IG = 128), so they are side by side; then the combination less one feature at a
time (`VARIANTS`).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session13"))
import lone_input as li  # noqa: E402

from megasim.app.calibrate.trace_law import graph_of, load_sample  # noqa: E402
from megasim.contract.problem import Op  # noqa: E402
from megasim.gpu.backend import COMPILE_OPTIONS, KERNEL_DIR, KernelConfig, kernel_source  # noqa: E402
from megasim.gpu.megakernel import Workspace  # noqa: E402

COMBINED = r"""
// 128 blocks take a ticket, read their op and run the input body, through the megakernel's switch over all four
// bodies (SW) or directly; the rest poll the count-down counter by acquire (SPIN 1) or relaxed (SPIN 2) loads, as
// GEMMs behind D_IG = 128 do, or exit (SPIN 0). FENCE: every working thread fences at the end, as the megakernel's do.
template <bool SW, int SPIN, bool FENCE>
__device__ __forceinline__ void li_combined_body(const float* __restrict__ x, const float* __restrict__ w, float* U,
        float* V, float* Mb, float* __restrict__ y, const int* __restrict__ ops, unsigned long long* t, int* cnt,
        int n_in) {
    __shared__ int li_ticket;
    if (threadIdx.x == 0) li_ticket = atomicAdd(cnt + 2, 1);
    __syncthreads();
    const int b = li_ticket;
    if (b < n_in) {
        LI_OPEN
        if (SW) {
            switch (ops[b]) {
                case MS_OP_FILTER_TRANSFORM: ms_filter_task(w, U, b); break;
                case MS_OP_INPUT_TRANSFORM: ms_input_task(x, V, b / MS_SI, b % MS_SI); break;
                case MS_OP_GEMM: ms_gemm_task(U, V, Mb, b / MS_SG, b % MS_SG); break;
                case MS_OP_OUTPUT_TRANSFORM: ms_output_task(Mb, y, b / MS_SO, b % MS_SO); break;
                default: break;
            }
        } else {
            ms_input_task(x, V, b / MS_SI, b % MS_SI);
        }
        if (FENCE) __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned smid; asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
            t[2 * b] = li_t0; t[2 * b + 1] = li_now(); t[2048 + b] = smid;
        }
        if (threadIdx.x == 0) { __threadfence(); atomicSub(cnt, 1); }
        return;
    }
    if (SPIN && threadIdx.x == 0) {
        unsigned sleep_ns = 32;
        while (li_load(cnt, SPIN == 1) > 0) {
            if (li_load(cnt + 1, SPIN == 1) != 0) break;
            __nanosleep(sleep_ns);
            sleep_ns = sleep_ns < 1024 ? 2 * sleep_ns : 1024;
        }
    }
    __syncthreads();
}
#define LI_VARIANT(name, SW, SPIN, FENCE) \
extern "C" __global__ void __launch_bounds__(MS_NT, MS_MIN_BLOCKS) \
name(const float* __restrict__ x, const float* __restrict__ w, float* U, float* V, float* Mb, \
     float* __restrict__ y, const int* __restrict__ ops, unsigned long long* t, int* cnt, int n_in) { \
    li_combined_body<SW, SPIN, FENCE>(x, w, U, V, Mb, y, ops, t, cnt, n_in); }
LI_VARIANT(li_all, true, 1, true)
LI_VARIANT(li_no_switch, false, 1, true)
LI_VARIANT(li_no_spin, true, 0, true)
LI_VARIANT(li_relaxed_spin, true, 2, true)
LI_VARIANT(li_no_fence, true, 1, false)
LI_VARIANT(li_ticket_only, false, 0, false)
LI_VARIANT(li_switch_relaxed_nofence, true, 2, false)
LI_VARIANT(li_no_switch_relaxed, false, 2, true)
"""
VARIANTS = {"all": "the megakernel's switch, acquire polls beside, fences", "no_switch": "the input body called directly",
            "no_spin": "no blocks polling beside (they exit)", "relaxed_spin": "polls by relaxed loads",
            "no_fence": "no fence at the end", "ticket_only": "ticket and task map only (none of the three)",
            "switch_relaxed_nofence": "the switch alone of the three, neighbours polling by relaxed loads",
            "no_switch_relaxed": "no switch, relaxed polls, fences"}


def stats(work, sms=None) -> dict:
    """Median and spread of the blocks' work; with their SMs (one array per launch), how many SMs the 128 blocks
    ran on and the median work of the blocks alone on their SM and of those sharing it."""
    out = {**li.summary(work), "blocks": int(len(work))}
    if sms is not None:
        alone = np.concatenate([np.bincount(s)[s] == 1 for s in sms])
        out.update(distinct_sms=[int(len(np.unique(s))) for s in sms],
                   alone_us=float(np.median(work[alone])) if alone.any() else None,
                   sharing_us=float(np.median(work[~alone])) if (~alone).any() else None)
    return out


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    meta, _ = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    g = graph_of(meta["ResNet-1-dig128"])
    source = kernel_source(KernelConfig.of(g)) + li.EXTRA + COMBINED
    mod = cp.RawModule(code=source, options=COMPILE_OPTIONS + (f"-I{KERNEL_DIR}",))
    n, c, h, w = g.layer.n, g.layer.c, g.layer.h, g.layer.w
    x = cp.random.standard_normal(n * h * w * c, dtype=cp.float32)
    wts = cp.random.standard_normal(g.layer.k * c * 9, dtype=cp.float32)
    ws = Workspace(g)
    y = cp.zeros(n * g.layer.k * h * w, dtype=cp.float32)
    t = cp.zeros(3 * 1024, dtype=cp.uint64)
    flush = cp.zeros(64 * 1024 * 1024, dtype=cp.float32)
    ops = cp.full(1024, int(Op.INPUT_TRANSFORM), dtype=cp.int32)
    rows = {"own/128": stats(li.block_work(mod.get_function("li_own"), 128, (x, ws.V, t), t, flush))}
    cnt = cp.zeros(3, dtype=cp.int32)
    for name in VARIANTS:
        fn = mod.get_function(f"li_{name}")
        work, sms = [], []
        for rep in range(li.REPS + 2):
            flush.fill(rep)
            t.fill(0)
            cnt[:] = cp.asarray([128, 0, 0], dtype=cp.int32)
            fn((128 + 3 * 132,), (128,), (x, wts, ws.U, ws.V, ws.M, y, ops, t, cnt, np.int32(128)))
            cp.cuda.Device().synchronize()
            if rep >= 2:
                host = t.get()
                raw = host[:2048].reshape(-1, 2)[:128]
                work.append((raw[:, 1] - raw[:, 0]) / 1000.0)
                sms.append(host[2048:2048 + 128].astype(np.int64))
        rows[name] = stats(np.concatenate(work), sms)
    heads, sms = li.megakernel_head(g, ws, x, wts, y, flush, launches=6)
    rows["megakernel/head128"] = stats(np.concatenate(heads), sms)
    (out / "combined.json").write_text(json.dumps({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                                                   "rows": rows}, indent=1))
    print("| variant | head block work, median (p10-p90) us | SMs the 128 ran on | alone on its SM / sharing |\n"
          "|---|---|---|---|")
    fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    for name, r in rows.items():
        print(f"| {name} | {r['median_us']:.1f} ({r['p10_us']:.1f}-{r['p90_us']:.1f}) | "
              f"{r.get('distinct_sms', '')} | {fmt(r.get('alone_us'))} / {fmt(r.get('sharing_us'))} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
