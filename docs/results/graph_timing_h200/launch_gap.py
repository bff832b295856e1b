"""How long a kernel boundary costs inside a CUDA graph, as a function of how long the kernel before it runs.

    python3 docs/results/graph_timing_h200/launch_gap.py OUT_DIR      (on a GPU; needs only CuPy and NumPy)

The profiles' `launch_overhead_us` is the microbenchmark's gap between back-to-back *empty* 132-block
kernels in a graph (last block end to next first block start, %globaltimer). With empty kernels the
launch front end is the bottleneck (one kernel per ~0.93 us), so that gap may hold launch work which a
longer kernel hides. Here every block of kernel i holds its SM for `hold_ns`, and a graph of N such
kernels is timed two ways: device stamps (gap = next first start - this last end) and CUDA events over
graphs of N and 2N kernels (the per-kernel slope beyond the hold is what a prefix difference sees).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cupy as cp
import numpy as np

SRC = r"""
__device__ __forceinline__ unsigned long long gt() {
    unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
extern "C" __global__ void hold(unsigned long long* rec, int slot, unsigned long long ns) {
    unsigned long long t0 = gt();
    if (threadIdx.x == 0) atomicMin(rec + 2 * slot, t0);
    if (ns) { while (gt() - t0 < ns) {} }
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(rec + 2 * slot + 1, gt());
}
"""
HOLDS_NS = (0, 500, 1000, 2000, 5000, 10000, 20000)
GRIDS = (132, 528)
N = 100


def graph_of(fn, grid, hold_ns, rec, n):
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for i in range(n):
            fn((grid,), (128,), (rec, np.int32(i), np.uint64(hold_ns)), stream=stream)
        return stream.end_capture(), stream


def event_us(graph, stream, reps=15):
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        graph.launch(stream)
        b.record(stream)
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    return float(np.median(times[3:]))


def main(out: Path) -> None:
    fn = cp.RawModule(code=SRC, options=("-arch=sm_90",)).get_function("hold")
    rec = cp.zeros(2 * 2 * N, dtype=cp.uint64)
    rows = []
    for grid in GRIDS:
        for hold in HOLDS_NS:
            g1, s1 = graph_of(fn, grid, hold, rec, N)
            g2, s2 = graph_of(fn, grid, hold, rec, 2 * N)
            gaps, spans = [], []
            for _ in range(5):
                rec[0::2] = np.uint64(0xFFFFFFFFFFFFFFFF)
                rec[1::2] = np.uint64(0)
                g1.launch(s1)
                s1.synchronize()
                r = rec.get().astype(np.int64)[: 2 * N]
                s, e = r[0::2], r[1::2]
                gaps.append(np.median(s[1:] - e[:-1]) / 1e3)
                spans.append(np.median(e - s) / 1e3)
            t1, t2 = event_us(g1, s1), event_us(g2, s2)
            slope = (t2 - t1) / N
            row = {"grid": grid, "hold_us": hold / 1e3, "gap_us": float(np.median(gaps)),
                   "span_us": float(np.median(spans)), "event_us_per_kernel": slope,
                   "boundary_us": slope - float(np.median(spans)), "graph_event_us": [t1, t2]}
            rows.append(row)
            print(f"grid {grid:4d} hold {hold/1e3:5.1f} us: stamp gap {row['gap_us']:.3f}  span {row['span_us']:.3f}  "
                  f"event slope {slope:.3f}  boundary (slope - span) {row['boundary_us']:.3f}", flush=True)
    dev = cp.cuda.runtime.getDeviceProperties(0)
    (out / "launch_gap.json").write_text(json.dumps({"device": dev["name"].decode(), "kernels": N, "rows": rows}, indent=1))


if __name__ == "__main__":
    out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
    main(out)
