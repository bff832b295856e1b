"""What a microbenchmark's raw numbers mean: the L2 knee, dispatch order and latency.

These helpers turn the timestamps and bandwidths `gpu/microbench.py` reads
off the device into the figures the calibration fit uses. They are pure
NumPy, kept apart from the device code so CI checks them on constructed data
without a GPU.
"""
from __future__ import annotations

import re

import numpy as np

from megasim.contract.ranking import spearman


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
