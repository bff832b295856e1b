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
`calibrate_measure(gpu, out_dir, reps)` adds the real kernels' tasks and
mapping runs (`gpu.calibration_runs`) and writes the three raw files that
`sim/calibrate` fits. Pure helpers (the L2 knee, dispatch statistics) run
without a GPU so CI can test them.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from megasim.contract.ranking import spearman
from megasim.gpu.backend import KERNEL_DIR, measurement_header, require_cupy

SCHEMA_VERSION = 1
SOURCE = KERNEL_DIR / "microbench.cu"
DISPATCH_WAVES = 48
DISPATCH_WORK_CYCLES = 4000
SMEM_RESERVED_PER_BLOCK = 1024
SPIN_SLEEP_NS = (32, 1024)  # the megakernel's wait-loop back-off (gpu/kernels/megakernel.cu ms_wait)
SPIN_ITERS = 24  # Hopper and Ampere keep 1 KiB per resident block for the system


# ---- pure helpers (CPU) ---------------------------------------------------------

def gpu_short_name(device: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA H100 80GB HBM3' -> 'h100'."""
    m = re.search(r"\b([A-Z]{1,2}\d{2,4})\b", device)
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_")


def l2_knee(sweep: list[dict], l2_bytes: int) -> dict:
    """L2 and DRAM plateaus of a working-set sweep and the bytes where bandwidth falls half-way between them.

    L2 level: the median over working sets in (L2/8, L2] (smaller ones leave threads idle);
    DRAM level: the largest working set. The first fall through the midpoint past L2/8 is
    interpolated in log(bytes).
    """
    pts = sorted(sweep, key=lambda p: p["bytes"])
    plateau = [p["gbps"] for p in pts if l2_bytes / 8 < p["bytes"] <= l2_bytes] or [pts[0]["gbps"]]
    l2, dram = float(np.median(plateau)), pts[-1]["gbps"]
    mid = (l2 + dram) / 2
    knee = None
    for prev, cur in zip(pts, pts[1:]):
        if cur["bytes"] > l2_bytes / 8 and prev["gbps"] >= mid > cur["gbps"]:
            f = (prev["gbps"] - mid) / (prev["gbps"] - cur["gbps"])
            knee = float(np.exp(np.log(prev["bytes"]) + f * (np.log(cur["bytes"]) - np.log(prev["bytes"]))))
            break
    return {"l2_gbps": l2, "dram_gbps": dram, "midpoint_gbps": mid, "knee_bytes": knee,
            "knee_fraction_of_l2": knee / l2_bytes if knee else None}


def _pct(v) -> dict:
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0:
        return {"median": None, "p10": None, "p90": None}
    return {"median": float(np.median(v)), "p10": float(np.percentile(v, 10)), "p90": float(np.percentile(v, 90))}


def start_order(ticket, t0_ns) -> np.ndarray:
    """Chip-wide start order: %globaltimer first (32 ns ticks), the atomic ticket within a tick."""
    return np.lexsort((np.asarray(ticket), np.asarray(t0_ns))).argsort()


def strict_max_displacement(t0_ns) -> int:
    """Largest blockIdx distance from a block back to an earlier-indexed one that started a whole tick later."""
    t0 = np.asarray(t0_ns)
    order = np.argsort(t0, kind="stable")
    idx_sorted, t_sorted = order, t0[order]
    cummax = np.maximum.accumulate(idx_sorted)
    first_of_tick = np.searchsorted(t_sorted, t0, side="left")
    earlier_max = np.where(first_of_tick > 0, cummax[np.maximum(first_of_tick - 1, 0)], -1)
    return int(max(0, (earlier_max - np.arange(len(t0))).max()))


def dispatch_stats(rec: np.ndarray, sm_count: int, slots_per_sm: int) -> dict:
    """Statistics of one dispatch probe; rec rows (by blockIdx): smid, ticket, t0 ns, c0, t1 ns, c1.

    Start order is %globaltimer order with the atomic ticket breaking ties
    inside one 32 ns tick; the "strict" figures use the timer alone (a block
    counts as out of order only when it started a whole tick after a later
    blockIdx). Slots of an SM: the most blocks seen running on it at once.
    The latency pairs, on each SM, the k-th block to start (k >= slots) with
    the (k - slots)-th block to end: the slot it took over, exact when every
    block holds its slot equally long.
    """
    rec = np.asarray(rec, dtype=np.int64)
    sm, ticket, g0, c0, g1, c1 = (rec[:, i] for i in range(6))
    n = len(rec)
    idx = np.arange(n)
    order = start_order(ticket, g0)
    lat_c, lat_ns, conc = [], [], []
    for s in np.unique(sm):
        on = np.flatnonzero(sm == s)
        slots = int(max(((g0[on] <= t) & (g1[on] > t)).sum() for t in g0[on]))
        conc.append(slots)
        starts_c, ends_c = np.sort(c0[on]), np.sort(c1[on])
        starts_g, ends_g = np.sort(g0[on]), np.sort(g1[on])
        lat_c += list(starts_c[slots:] - ends_c[:len(on) - slots])
        lat_ns += list(starts_g[slots:] - ends_g[:len(on) - slots])
    first = order < sm_count * max(conc)
    by_start = np.argsort(order, kind="stable")

    def rate(mask):
        span_us = (g0[mask].max() - g0[mask].min()) / 1e3 if mask.sum() > 1 else 0.0
        return float(mask.sum() / span_us) if span_us > 0 else None

    return {
        "blocks": n, "sms_used": int(len(np.unique(sm))), "measured_blocks_per_sm": int(max(conc)),
        "target_blocks_per_sm": slots_per_sm,
        "spearman_start_vs_blockidx": spearman(order, idx),
        "out_of_order_fraction": float(np.mean(order[1:] < order[:-1])) if n > 1 else 0.0,
        "max_displacement": int(np.abs(order - idx).max()),
        "spearman_ticket_vs_blockidx": spearman(ticket, idx),
        "strict_out_of_order_fraction": float(np.mean(g0[1:] < g0[:-1])) if n > 1 else 0.0,
        "strict_max_displacement": strict_max_displacement(g0),
        "first_wave_span_ns": int(g0[first].max() - g0[first].min()),
        "first_wave_rate_blocks_per_us": rate(first),
        "steady_rate_blocks_per_us": rate(~first),
        "first_wave_smids": sm[by_start[:sm_count]].tolist(),
        "first_wave_smids_by_blockidx": sm[:sm_count].tolist(),
        "dispatch_latency_cycles": _pct(lat_c),
        "dispatch_latency_ns": _pct(lat_ns),
        "negative_latencies": int((np.asarray(lat_c) < 0).sum()),
    }


def lead_sms(rows: list[dict], longest: int = 16) -> list[int]:
    """SMs that take the first blocks in every probe: the longest prefix (as a set) all configs share."""
    lists = [r["first_wave_smids_by_blockidx"] for r in rows]
    best = []
    for k in range(1, min(longest, *(len(x) for x in lists)) + 1):
        sets = {frozenset(x[:k]) for x in lists}
        if len(sets) == 1 and len(next(iter(sets))) == k:
            best = sorted(next(iter(sets)))
    return best


def dispatch_summary(rows: list[dict]) -> dict:
    """The figures the fit reads: slot-to-block latency, dispatcher rate, lead SMs (sim.calibrate.fit)."""
    timed = [r for r in rows if r["work_cycles"] > 0]
    empty = [r for r in rows if r["work_cycles"] == 0 and r["steady_rate_blocks_per_us"]]
    wave = [r["first_wave_rate_blocks_per_us"] for r in timed if r["first_wave_rate_blocks_per_us"]]
    return {"latency_cycles": float(np.median([r["dispatch_latency_cycles"]["median"] for r in timed])),
            "blocks_per_us": max(r["steady_rate_blocks_per_us"] for r in empty) if empty else None,
            "blocks_per_us_source": "steady state of empty blocks (the dispatcher's throughput)",
            "first_wave_blocks_per_us": float(np.median(wave)) if wave else None,
            "first_wave_lead_sms": lead_sms(rows),
            "spearman_min": min(r["spearman_start_vs_blockidx"] for r in rows),
            "max_displacement": max(r["max_displacement"] for r in rows)}


def make_header() -> dict:
    """`measurement_header` and this module's schema version, for every raw file."""
    return {**measurement_header(), "schema_version": SCHEMA_VERSION}


# ---- device side ------------------------------------------------------------------

class _Bench:
    """The compiled microbench module plus event timing; one per measurement run."""

    def __init__(self):
        cp = self.cp = require_cupy()
        self.mod = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",))
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


def measure_fp32(b: _Bench, reps: int, iters: int = 16384) -> dict:
    cp = b.cp
    blocks, nt = b.sms * 2, 1024
    rec = cp.zeros(5 * blocks, dtype=cp.uint64)
    fn = b.fn("mb_ffma")
    launch = lambda: fn((blocks,), (nt,), (b.sink, np.int32(iters), np.float32(0.9999), np.float32(1e-4), rec))
    t = b.time_us(launch, reps, warmup=1)
    r = rec.get().reshape(blocks, 5).astype(np.int64)
    flops_block = nt * iters * 16 * 8 * 2
    per_sm, mhz = [], []
    for s in np.unique(r[:, 0]):
        on = r[r[:, 0] == s]
        cyc = on[:, 2].max() - on[:, 1].min()
        ns = on[:, 4].max() - on[:, 3].min()
        per_sm.append(len(on) * flops_block / cyc)
        mhz.append(cyc / ns * 1e3)
    res = cp.zeros(1, dtype=cp.uint64)
    b.fn("mb_timer_resolution")((1,), (1,), (res, np.int32(100000)))
    total = blocks * flops_block
    return {"flop_per_cycle_per_sm": float(np.median(per_sm)), "flop_per_cycle_per_sm_min": float(np.min(per_sm)),
            "tflops": total / t / 1e6, "kernel_us": t, "blocks": blocks, "threads": nt,
            "ffma_chains_per_thread": 8, "sm_clock_mhz": float(np.median(mhz)), "clock_mhz": float(np.median(mhz)),
            "sm_clock_mhz_min": float(np.min(mhz)), "sm_clock_mhz_max": float(np.max(mhz)),
            "blocks_per_sm_seen": sorted({int(v) for v in np.bincount(r[:, 0])[np.unique(r[:, 0])]}),
            "globaltimer_resolution_ns": int(res.get()[0])}


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


SECTIONS = ("dram", "l2", "fp32", "atomics", "launch", "dispatch")


def measure_hardware(reps: int = 10) -> dict:
    """Every hardware section, in order; a section that fails records its error instead."""
    b = _Bench()
    res: dict = {}
    steps = {
        "dram": lambda: measure_dram(b, reps),
        "l2": lambda: measure_l2(b, reps),
        "fp32": lambda: measure_fp32(b, max(3, reps // 3)),
        "atomics": lambda: measure_atomics(b, reps, res.get("fp32", {}).get("sm_clock_mhz") or 1980.0),
        "launch": lambda: measure_launch(b, reps),
        "dispatch": lambda: measure_dispatch(b),
    }
    for name in SECTIONS:
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


def summary(micro: dict) -> str:
    """A few headline lines of a micro document (printed at the end of a device run)."""
    def g(sec, *keys):
        v = micro.get(sec, {})
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        return v
    lines = [f"dram read/write/copy GB/s: {g('dram', 'read_gbps')} / {g('dram', 'write_gbps')} / {g('dram', 'copy_gbps')}",
             f"l2 GB/s {g('l2', 'l2_gbps')}, knee bytes {g('l2', 'knee_bytes')}",
             f"fp32 FLOP/cycle/SM {g('fp32', 'flop_per_cycle_per_sm')}, TFLOP/s {g('fp32', 'tflops')}, "
             f"clock MHz {g('fp32', 'sm_clock_mhz')}",
             f"atomic latency cycles {g('atomics', 'latency_cycles')}, polls {g('atomics', 'poll_round_trip_cycles')}, "
             f"spin loop {g('atomics', 'spin_loop_cycles')}, pingpong {g('atomics', 'pingpong')}",
             f"launch us plain {g('launch', 'plain_us_per_launch')}, graph {g('launch', 'graph_us_per_launch')}, "
             f"full-grid gap plain {g('launch', 'plain_us')}, graph {g('launch', 'graph_us')}",
             f"dispatch summary {micro.get('dispatch_summary')}"]
    for d in micro.get("dispatch", []) if isinstance(micro.get("dispatch"), list) else []:
        lines.append(f"dispatch nt={d['threads']} occ={d['measured_blocks_per_sm']} work={d['work_cycles']}: "
                     f"rho={d['spearman_start_vs_blockidx']:.4f} ooo={d['out_of_order_fraction']:.3f} "
                     f"maxdisp={d['max_displacement']} strict ooo={d['strict_out_of_order_fraction']:.3f} "
                     f"maxdisp={d['strict_max_displacement']} wave1={d['first_wave_rate_blocks_per_us']} "
                     f"steady={d['steady_rate_blocks_per_us']} lat={d['dispatch_latency_cycles']['median']}")
    for t in micro.get("tasks", []):
        lines.append(f"task {t['layer']['name']} {t['op']} occ={t['blocks_per_sm']} {t['time_us']:.1f} us")
    return "\n".join(lines)


def _write(path: Path, doc: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return str(path)


def calibrate_measure(gpu_name: str | None, out_dir: str, reps: int = 20, *, parts=("hardware", "tasks", "runs"),
                      layers=None, budget_s: float = 400.0) -> list[str]:
    """Measure and write <gpu>_micro.json, <gpu>_runs.json and <gpu>_trace_resnet2.json; returns the paths."""
    from megasim.app.calibrate import gpu_runs as cr
    header = make_header()
    gpu_name = gpu_name or gpu_short_name(header["device"])
    out = Path(out_dir)
    paths = []
    if "hardware" in parts or "tasks" in parts:
        micro = {"header": header}
        micro.update(measure_hardware(reps) if "hardware" in parts
                     else {s: [] if s == "dispatch" else {} for s in SECTIONS})
        micro.setdefault("dispatch_summary", {})
        micro["tasks"] = []
        if "tasks" in parts:
            try:
                micro["tasks"] = cr.measure_tasks(gpu_name, reps=reps, layers=layers)
            except Exception as exc:  # the hardware sections are still worth writing
                micro["header"]["tasks_error"] = f"{type(exc).__name__}: {exc}"
        paths.append(_write(out / f"{gpu_name}_micro.json", micro))
    if "runs" in parts:
        runs, trace = cr.measure_runs(gpu_name, reps=reps, layers=layers, budget_s=budget_s)
        paths.append(_write(out / f"{gpu_name}_runs.json", {"header": {**header, **runs.pop("header_extra")},
                                                            **runs}))
        if trace is not None:
            paths.append(_write(out / f"{gpu_name}_trace_resnet2.json", {"header": header, **trace}))
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m megasim.gpu.microbench", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="scenarios/calibrations/raw", help="folder for the raw JSON files")
    p.add_argument("--gpu", default=None, help="file prefix (default: from the device name, e.g. h200)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--parts", default="hardware,tasks,runs", help="comma list of hardware, tasks, runs")
    p.add_argument("--layers", default=None, help="comma list of layer names (default: all)")
    p.add_argument("--budget-s", type=float, default=400.0, help="wall-clock budget of the runs part")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    paths = calibrate_measure(a.gpu, a.out, a.reps, parts=tuple(a.parts.split(",")),
                              layers=a.layers.split(",") if a.layers else None, budget_s=a.budget_s)
    for path in paths:
        print(path)
        if path.endswith("_micro.json"):
            with open(path) as f:
                print(summary(json.load(f)))
    print(f"[microbench] total {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
