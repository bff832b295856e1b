"""Hardware microbenchmarks: the machine facts the simulator's parameters stand for.

The simulator charges a thread block for DRAM and L2 bytes, FP32 FLOPs, a
dispatch slot, an atomic ticket and counter polls. Each has a number in
`scenarios/gpus/*.toml`, most of them datasheet figures or guesses. This
module measures them on the GPU at hand, one small kernel per fact
(`gpu/kernels/microbench.cu`): stream DRAM, sweep a working set across the L2
size, run independent FFMA chains while reading the SM clock, chain atomics
and loads through one word, ping-pong a flag between two blocks, queue empty
kernels behind a sleeping one, and launch 48 waves of blocks that report
where and when they started. Every timing is a median of CUDA-event or
in-kernel timestamps after a warm-up.

`measure_hardware(reps)` returns the sections as plain dicts;
`megasim calibrate` (`megasim.app.calibrate.measure`) adds the real kernels'
tasks and mapping runs and writes the three raw files that the fit reads.
What the numbers mean (ranks, the L2 knee, dispatch statistics) is computed
in `gpu/microbench_stats.py`, without a GPU, so CI can test it.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from megasim.gpu.backend import KERNEL_DIR, measurement_header, require_cupy
from megasim.gpu.microbench_stats import dispatch_stats, dispatch_summary, l2_knee

SCHEMA_VERSION = 1
SOURCE = KERNEL_DIR / "microbench.cu"
DISPATCH_WAVES = 48
DISPATCH_WORK_CYCLES = 4000
SMEM_RESERVED_PER_BLOCK = 1024
SPIN_SLEEP_NS = (32, 1024)  # the megakernel's back-off on a counter (gpu/kernels/megakernel.cu ms_bounded_wait)
SPIN_ITERS = 24  # Hopper and Ampere keep 1 KiB per resident block for the system


# What the runtime reports of the SM and the L2 (cudaDeviceProp), kept in the header so that a spec can be
# written from the raw file alone (`megasim.app.calibrate.spec_writer`).
DEVICE_PROPERTIES = ("multiProcessorCount", "maxThreadsPerMultiProcessor", "maxBlocksPerMultiProcessor",
                     "regsPerMultiprocessor", "sharedMemPerMultiprocessor", "sharedMemPerBlockOptin", "l2CacheSize")


def make_header() -> dict:
    """`measurement_header`, the device's reported properties and this module's schema version, for every raw
    file."""
    cp = require_cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return {**measurement_header(), "schema_version": SCHEMA_VERSION,
            "device_properties": {k: int(props[k]) for k in DEVICE_PROPERTIES if k in props}}


# ---- device side ------------------------------------------------------------------

class _Bench:
    """The compiled microbench module plus event timing; one per measurement run."""

    def __init__(self):
        cp = self.cp = require_cupy()
        self.mod = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17", f"-I{KERNEL_DIR}"))
        dev = cp.cuda.Device()
        attrs = dev.attributes
        self.sms = int(attrs["MultiProcessorCount"])
        self.l2 = int(attrs["L2CacheSize"])
        self.smem_per_sm = int(attrs.get("MaxSharedMemoryPerMultiprocessor", 233472))
        self.reserved = int(attrs.get("ReservedSharedMemoryPerBlock", SMEM_RESERVED_PER_BLOCK))
        self.sink = cp.zeros(4, dtype=cp.float32)

    def fn(self, name):
        return self.mod.get_function(name)

    def time_us(self, launch, reps: int, warmup: int = 2) -> float:
        cp = self.cp
        for _ in range(warmup):
            launch()
        out = []
        for _ in range(reps):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            launch()
            e.record()
            e.synchronize()
            out.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
        return float(np.median(out))


def measure_dram(b: _Bench, reps: int) -> dict:
    cp = b.cp
    nbytes = max(8 * b.l2, 1 << 30)
    n4 = nbytes // 16
    a = cp.random.standard_normal(n4 * 4, dtype=cp.float32)
    c = cp.empty_like(a)
    grid, nt = (b.sms * 8,), (256,)
    rd, wr, cpy = b.fn("mb_read"), b.fn("mb_write"), b.fn("mb_copy")
    t_r = b.time_us(lambda: rd(grid, nt, (a, np.uint64(n4), b.sink)), reps)
    t_w = b.time_us(lambda: wr(grid, nt, (c, np.uint64(n4), np.float32(1.5))), reps)
    t_c = b.time_us(lambda: cpy(grid, nt, (a, c, np.uint64(n4))), reps)
    del a, c
    return {"buffer_bytes": nbytes, "read_gbps": nbytes / t_r / 1e3, "write_gbps": nbytes / t_w / 1e3,
            "copy_gbps": 2 * nbytes / t_c / 1e3, "copy_counts": "bytes read + bytes written",
            "read_us": t_r, "write_us": t_w, "copy_us": t_c}


def l2_sizes(l2: int) -> list[int]:
    mb = 1 << 20
    sizes = [mb, 2 * mb, 4 * mb, 8 * mb, 16 * mb]
    sizes += [int(l2 * f / 16) for f in range(6, 25)]  # 3/8 L2 .. 1.5 L2 in steps of L2/16
    sizes += [2 * l2, 3 * l2, 4 * l2]
    return sorted({s // 4096 * 4096 for s in sizes})


def measure_l2(b: _Bench, reps: int, dram_gbps: float | None = None) -> dict:
    cp = b.cp
    sizes = l2_sizes(b.l2)
    buf = cp.random.standard_normal(max(sizes) // 4, dtype=cp.float32)
    fn = b.fn("mb_l2_read")
    sweep = []
    for size in sizes:
        passes = max(1, int(round(2e9 / size)))
        n4 = size // 16
        t = b.time_us(lambda: fn((b.sms * 8,), (256,), (buf, np.uint64(n4), np.int32(passes), b.sink)), reps)
        sweep.append({"bytes": size, "passes": passes, "gbps": size * passes / t / 1e3})
    del buf
    knee = l2_knee(sweep, b.l2)
    return {"l2_bytes": b.l2, "sweep": sweep, **knee, "gbps": knee["l2_gbps"], "load": "ld.global.cg (L2, no L1)"}


def _per_sm_rates(r: np.ndarray, flops_block: float) -> tuple[list, list]:
    """From per-block records (SM, clock64 start, end, %globaltimer start, end): each SM's FLOP per cycle (its
    blocks' FLOPs over the span of its clock) and its clock in MHz (cycles over nanoseconds)."""
    per_sm, mhz = [], []
    for s in np.unique(r[:, 0]):
        on = r[r[:, 0] == s]
        cyc = on[:, 2].max() - on[:, 1].min()
        per_sm.append(len(on) * flops_block / cyc)
        mhz.append(cyc / (on[:, 4].max() - on[:, 3].min()) * 1e3)
    return per_sm, mhz


def measure_fp32(b: _Bench, reps: int, iters: int = 16384) -> dict:
    cp = b.cp
    blocks, nt = b.sms * 2, 1024
    rec = cp.zeros(5 * blocks, dtype=cp.uint64)
    fn = b.fn("mb_ffma")
    launch = lambda: fn((blocks,), (nt,), (b.sink, np.int32(iters), np.float32(0.9999), np.float32(1e-4), rec))
    t = b.time_us(launch, reps, warmup=1)
    r = rec.get().reshape(blocks, 5).astype(np.int64)
    flops_block = nt * iters * 16 * 8 * 2
    per_sm, mhz = _per_sm_rates(r, flops_block)
    res = cp.zeros(1, dtype=cp.uint64)
    b.fn("mb_timer_resolution")((1,), (1,), (res, np.int32(100000)))
    total = blocks * flops_block
    return {"flop_per_cycle_per_sm": float(np.median(per_sm)), "flop_per_cycle_per_sm_min": float(np.min(per_sm)),
            "tflops": total / t / 1e6, "kernel_us": t, "blocks": blocks, "threads": nt,
            "ffma_chains_per_thread": 8, "sm_clock_mhz": float(np.median(mhz)), "clock_mhz": float(np.median(mhz)),
            "sm_clock_mhz_min": float(np.min(mhz)), "sm_clock_mhz_max": float(np.max(mhz)),
            "blocks_per_sm_seen": sorted({int(v) for v in np.bincount(r[:, 0])[np.unique(r[:, 0])]}),
            "globaltimer_resolution_ns": int(res.get()[0])}


def measure_mma_tf32(b: _Bench, reps: int, iters: int = 4096) -> dict:
    """Tensor cores, TF32 mma.sync m16n8k8 with FP32 accumulation: the rate with 8 independent accumulators per
    warp and 32 warps per SM (FLOP per cycle per SM, TFLOP/s), and the latency of one dependent chain in one
    warp (cycles per mma). A 3xTF32 GEMM issues three of these per product (the `tensor_core_gemm` law)."""
    cp = b.cp
    blocks, nt, chains, flop_mma = b.sms * 4, 256, 8, 2 * 16 * 8 * 8
    rec = cp.zeros(5 * blocks, dtype=cp.uint64)
    fn = b.fn("mb_mma_tf32_rate")
    t = b.time_us(lambda: fn((blocks,), (nt,), (b.sink, np.int32(iters), np.float32(1e-3), rec)), reps, warmup=1)
    r = rec.get().reshape(blocks, 5).astype(np.int64)
    flops_block = (nt // 32) * iters * chains * flop_mma
    per_sm, mhz = _per_sm_rates(r, flops_block)
    lat = cp.zeros(5, dtype=cp.uint64)
    lat_iters = 4096
    b.fn("mb_mma_tf32_latency")((1,), (32,), (b.sink, np.int32(lat_iters), np.float32(1e-3), lat))
    cp.cuda.get_current_stream().synchronize()
    lr = lat.get().astype(np.int64)
    return {"flop_per_cycle_per_sm": float(np.median(per_sm)), "flop_per_cycle_per_sm_min": float(np.min(per_sm)),
            "tflops": blocks * flops_block / t / 1e6, "kernel_us": t, "blocks": blocks, "threads": nt,
            "chains_per_warp": chains, "flop_per_mma": flop_mma, "sm_clock_mhz": float(np.median(mhz)),
            "latency_cycles_per_mma": float((lr[2] - lr[1]) / lat_iters), "instruction": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}


def measure_atomics(b: _Bench, reps: int, clock_mhz: float) -> dict:
    cp = b.cp
    words = cp.zeros(b.sms * 8 * 256 + 64, dtype=cp.int32)
    out = cp.zeros(8, dtype=cp.uint64)
    n = 4096
    lat = []
    for _ in range(max(3, reps // 2)):
        b.fn("mb_atomic_latency")((1,), (1,), (words, np.int32(n), np.int32(0), out))
        lat.append(int(out.get()[0]) / n)
    polls = {}
    for name, acq in (("volatile", 0), ("acquire", 1)):
        v = []
        for _ in range(max(3, reps // 2)):
            b.fn("mb_poll_latency")((1,), (1,), (words, np.int32(n), np.int32(0), np.int32(acq), out))
            v.append(int(out.get()[0]) / n)
        polls[name] = float(np.median(v))
    tput = {}
    fn = b.fn("mb_atomic_throughput")
    ops = 64
    for mode, label, grid, nt, per in ((0, "distinct_addresses", b.sms * 8, 256, None),
                                       (1, "same_address", b.sms * 8, 256, None),
                                       (2, "ticket_one_thread_per_block", b.sms * 48, 64, 1)):
        t = b.time_us(lambda: fn((grid,), (nt,), (words, np.int32(ops), np.int32(mode), words)), reps)
        count = grid * (per or nt) * ops
        tput[label] = {"gops": count / t / 1e3, "ops_per_cycle": count / (t * clock_mhz), "ops": count}
    ctl = cp.asarray(np.array([1, 0], dtype=np.int32))
    stamps = cp.zeros(SPIN_ITERS + 1, dtype=cp.uint64)
    periods = []
    for _ in range(max(3, reps // 2)):
        b.fn("mb_spin_loop")((1,), (1,), (ctl, np.int32(SPIN_ITERS), np.uint32(SPIN_SLEEP_NS[0]),
                                          np.uint32(SPIN_SLEEP_NS[1]), stamps))
        periods.append(np.diff(stamps.get().astype(np.int64)))
    period = np.median(np.array(periods), axis=0)
    flags = cp.zeros(64, dtype=cp.int32)
    pp = cp.zeros(8, dtype=cp.uint64)
    rounds = 2000
    b.fn("mb_pingpong")((2,), (32,), (flags, np.int32(rounds), pp))
    p = pp.get().astype(np.int64)
    return {"latency_cycles": float(np.median(lat)), "throughput": tput,
            "poll_round_trip_cycles": polls,
            "spin_loop": {"sleep_ns_start_cap": list(SPIN_SLEEP_NS), "iteration_cycles": period.tolist()},
            "spin_loop_cycles": float(period[-1]),
            # the model's spin_poll_cycles: one wait-loop iteration once the back-off has reached its cap
            "spin_poll_cycles": float(period[-1]),
            "pingpong": {"round_trip_cycles": p[0] / rounds, "handoff_cycles": p[0] / rounds / 2,
                         "poll_cycles_under_contention": (p[2] / p[1]) if p[1] else None,
                         "failed": bool(p[3]), "smids": [int(p[4]), int(p[5])]}}


def _stamp_stats(rec: np.ndarray) -> dict:
    s, e = rec[0::2].astype(np.int64), rec[1::2].astype(np.int64)
    return {"interval_us": float(np.median(np.diff(s))) / 1e3, "gap_us": float(np.median(s[1:] - e[:-1])) / 1e3}


def measure_launch(b: _Bench, reps: int, n: int = 500) -> dict:
    """Launch-to-launch time on the device, queue pre-filled behind a sleeping kernel (plain) and from a graph."""
    cp = b.cp
    stamp, sleep = b.fn("mb_stamp"), b.fn("mb_sleep")
    rec = cp.zeros(2 * n, dtype=cp.uint64)
    wake = cp.zeros(1, dtype=cp.uint64)
    sleep_ns = 60_000_000
    out = {"launches": n, "by_grid": []}
    for grid in (1, b.sms):
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            for i in range(n):
                stamp((grid,), (32,), (rec, np.int32(i)), stream=stream)
            graph = stream.end_capture()
        for mode in ("plain", "graph"):
            stats = []
            for _ in range(max(2, reps // 4)):
                rec[0::2] = np.uint64(0xFFFFFFFFFFFFFFFF)
                rec[1::2] = np.uint64(0)
                sleep((1,), (1,), (np.uint64(sleep_ns), wake))
                h0 = time.perf_counter()
                if mode == "plain":
                    for i in range(n):
                        stamp((grid,), (32,), (rec, np.int32(i)))
                else:
                    graph.launch(cp.cuda.get_current_stream())
                issue_s = time.perf_counter() - h0
                cp.cuda.get_current_stream().synchronize()
                stats.append(_stamp_stats(rec.get()))
            out["by_grid"].append({"grid": grid, "mode": mode,
                                   "interval_us": float(np.median([s["interval_us"] for s in stats])),
                                   "gap_us": float(np.median([s["gap_us"] for s in stats])),
                                   "queue_prefilled": issue_s < sleep_ns / 1e9})
        if grid == 1:
            t = b.time_us(lambda: graph.launch(cp.cuda.get_current_stream()), max(3, reps // 4))
            out["graph_event_us_per_launch"] = t / n
            t = b.time_us(lambda: [stamp((1,), (32,), (rec, np.int32(i))) for i in range(n)], max(3, reps // 4))
            out["plain_host_issue_us_per_launch"] = t / n
    one = {(r["grid"], r["mode"]): r for r in out["by_grid"]}
    out["plain_us_per_launch"] = one[(1, "plain")]["interval_us"]
    out["graph_us_per_launch"] = one[(1, "graph")]["interval_us"]
    # the model's launch_overhead_us: last block of one kernel to first block of the next, full grids
    out["plain_us"] = one[(b.sms, "plain")]["gap_us"]
    out["graph_us"] = one[(b.sms, "graph")]["gap_us"]
    return out


def forced_smem(smem_per_sm: int, reserved: int, blocks_per_sm: int, static: int = 0) -> int:
    """Dynamic shared memory per block that lets exactly `blocks_per_sm` blocks share an SM."""
    return smem_per_sm // blocks_per_sm - reserved - static


def dispatch_configs(work_cycles: int = DISPATCH_WORK_CYCLES) -> list[tuple[int, int, int]]:
    """(threads, blocks per SM, work cycles): every legal occupancy of 1-8 per block size, plus empty blocks."""
    out = [(nt, occ, work_cycles) for nt in (64, 256, 1024) for occ in (1, 2, 4, 8) if nt * occ <= 2048]
    return out + [(256, 8, 0), (64, 16, 0)]


def measure_dispatch(b: _Bench, configs=None) -> list[dict]:
    """48 waves of blocks per config; occupancy forced with unused dynamic shared memory."""
    cp = b.cp
    fn = b.fn("mb_dispatch")
    n = DISPATCH_WAVES * b.sms
    rec = cp.zeros(6 * n, dtype=cp.uint64)
    ticket = cp.zeros(1, dtype=cp.int32)
    out = []
    for nt, occ, work in configs or dispatch_configs():
        smem = forced_smem(b.smem_per_sm, b.reserved, occ)
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        args = (rec, ticket, np.int64(work))
        for _ in range(2):  # the first run is the warm-up
            ticket.fill(0)
            fn((n,), (nt,), args, shared_mem=smem)
        cp.cuda.get_current_stream().synchronize()
        st = dispatch_stats(rec.get().reshape(n, 6), b.sms, occ)
        out.append({"threads": nt, "dyn_smem_bytes": smem, "work_cycles": work, **st})
    return out


SECTIONS = ("dram", "l2", "fp32", "mma_tf32", "atomics", "launch", "dispatch")


def measure_hardware(reps: int = 10, sections=SECTIONS) -> dict:
    """Every hardware section of `sections`, in order; a section that fails records its error instead."""
    b = _Bench()
    res: dict = {}
    steps = {
        "dram": lambda: measure_dram(b, reps),
        "l2": lambda: measure_l2(b, reps),
        "fp32": lambda: measure_fp32(b, max(3, reps // 3)),
        "mma_tf32": lambda: {**measure_mma_tf32(b, max(3, reps // 3)),
                             "fp32_sm_clock_mhz": res.get("fp32", {}).get("sm_clock_mhz")},
        "atomics": lambda: measure_atomics(b, reps, res.get("fp32", {}).get("sm_clock_mhz") or 1980.0),
        "launch": lambda: measure_launch(b, reps),
        "dispatch": lambda: measure_dispatch(b),
    }
    for name in sections:
        t0 = time.perf_counter()
        try:
            res[name] = steps[name]()
        except Exception as exc:  # keep the other sections' data
            res[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"[microbench] {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        b.cp.get_default_memory_pool().free_all_blocks()
    if isinstance(res.get("dispatch"), list) and res["dispatch"]:
        res["dispatch_summary"] = dispatch_summary(res["dispatch"])
    return res
