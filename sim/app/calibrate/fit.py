"""Fit the model's free constants to measurements, in three stages.

1. Hardware, straight from the microbenchmarks: the SM clock under load,
   achieved DRAM and L2 bandwidth, atomic and poll latency, launch gap, block
   dispatch latency and rate, the usable L2 (the capacity knee).
2. Compute efficiency per task type, from the non-fused kernels of the
   training layers, each timed alone: for every layer, bisect the efficiency
   at which the simulated kernel takes the measured time; the profile keeps
   the geometric mean. A kernel the model calls memory-bound even at full
   efficiency says nothing about compute and is left out.
3. What only the megakernel shows (block overhead, usable L2 under fusion):
   a small grid search minimising the log error of fused time on a sample of
   the training runs.

Held-out runs are never read here. Stages 2 and 3 cost one simulation per
probe; the training set is sized so a fit takes minutes on two cores.
"""
from __future__ import annotations

import math
from statistics import fmean

from megasim.app.calibrate.predict import predict_fused, predict_kernel
from megasim.contract.problem import OP_NAMES, Op


def hardware_overrides(micro: dict, spec) -> tuple[dict, dict]:
    """Stage 1: measured figures that replace datasheet ones, and the model constants they fix."""
    hw, model = {}, {}
    fp32 = micro.get("fp32", {})
    if fp32.get("clock_mhz"):
        hw["clock_mhz"] = float(fp32["clock_mhz"])
    clock = hw.get("clock_mhz", spec.clock_mhz)
    dram = micro.get("dram", {})
    best = max((dram.get(k, 0.0) for k in ("read_gbps", "copy_gbps")), default=0.0)
    if best:
        model["dram_efficiency"] = round(min(1.0, best / spec.dram_gbps), 4)
    l2 = micro.get("l2", {})
    if l2.get("gbps"):
        hw["l2_gbps"] = float(l2["gbps"])
        model["l2_efficiency"] = 1.0
    if l2.get("knee_bytes"):
        model["l2_usable_fraction"] = round(min(1.0, l2["knee_bytes"] / spec.l2_bytes), 4)
    atomics = micro.get("atomics", {})
    for key, name in (("latency_cycles", "atomic_latency_cycles"), ("spin_poll_cycles", "spin_poll_cycles")):
        if atomics.get(key):
            hw[name] = int(round(atomics[key]))
    launch = micro.get("launch", {})
    if launch.get("graph_us"):
        hw["launch_overhead_us"] = float(launch["graph_us"])
    if launch.get("plain_us"):
        hw["first_launch_us"] = float(launch["plain_us"])
    disp = micro.get("dispatch_summary", {})
    if disp.get("latency_cycles"):
        hw["tb_dispatch_latency_cycles"] = int(round(disp["latency_cycles"]))
    if disp.get("blocks_per_us"):
        hw["tb_dispatch_interval_cycles"] = round(clock / disp["blocks_per_us"], 3)
    if disp.get("first_wave_lead_sms") is not None:
        hw["first_wave_lead_sms"] = list(disp["first_wave_lead_sms"])
    return hw, model


def _golden(f, lo: float, hi: float, iters: int) -> float:
    """Minimise a unimodal f on [lo, hi]."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def _kernel_log_error(job) -> float:
    run, op, spec = job
    return (math.log(predict_kernel(run, op, spec)) - math.log(run["nonfused_kernels_us"][op])) ** 2


def _kernel_error(runs, op: Op, spec, pool=None) -> float:
    jobs = [(r, op, spec) for r in runs]
    return fmean(pool.map(_kernel_log_error, jobs) if pool else map(_kernel_log_error, jobs))


def _with_efficiency(spec, op: Op, eff: float, **extra):
    return spec.with_model(compute_efficiency={**spec.compute_efficiency, OP_NAMES[op]: eff}, **extra)


def work_cv_from_trace(trace: dict, op: Op = Op.INPUT_TRANSFORM) -> float:
    """Stage 1, from a measured trace: the spread of one task type's block work time (end - ready).

    The input transforms are the default: they all start together, do equal work and share the
    machine with their own kind only, so their spread is the blocks' own variation. GEMM blocks in
    the megakernel also vary with what runs beside them, which the model already produces.
    """
    from megasim.contract.records import records_from_dicts
    rec = records_from_dicts(trace["records"])
    work = (rec["end_us"] - rec["ready_us"])[rec["op"] == op]
    return round(float(work.std() / work.mean()), 4) if len(work) > 1 else 0.0


def fit_compute_efficiency(runs, spec, half_channels=(0.0, 8.0, 16.0, 32.0, 64.0), iters: int = 14, pool=None,
                           block_bandwidths=(None, 32.0, 16.0, 8.0, 4.0)):
    """Stage 2: per task type, the efficiency minimising the log error of its kernel over the training layers.

    A GEMM's efficiency also depends on its loop length (C); its half-efficiency channel count is
    chosen from `half_channels` with the efficiency refitted for each. A transform block can be
    limited by the loads it keeps in flight rather than by its SM's share: its bytes per cycle are
    chosen from `block_bandwidths` (None: no such limit), again refitting the efficiency for each.
    """
    by_layer = {}
    for run in runs:
        if run.get("split") == "train" and run.get("nonfused_kernels_us"):
            by_layer.setdefault((run["layer"]["name"], str(run["partition"])), run)
    layers = [by_layer[k] for k in sorted(by_layer)]
    fitted, errors, block_bw = {}, {}, {}
    for op in Op:
        if op == Op.GEMM:
            candidates = [{"gemm_half_efficiency_channels": c0} for c0 in half_channels]
        else:
            candidates = [{"block_bytes_per_cycle": {**spec.block_bytes_per_cycle,
                                                     **({OP_NAMES[op]: bw} if bw else {})}}
                          for bw in block_bandwidths]
        best = None
        for extra in candidates:
            err_at = lambda log_eff: _kernel_error(layers, op, _with_efficiency(spec, op, math.exp(log_eff), **extra),
                                                   pool)
            log_eff = _golden(err_at, math.log(0.005), math.log(1.0), iters)
            err = err_at(log_eff)
            if best is None or err < best[0]:
                best = (err, math.exp(log_eff), extra)
        errors[OP_NAMES[op]] = round(math.sqrt(best[0]), 4)
        fitted[OP_NAMES[op]] = round(best[1], 4)
        if op == Op.GEMM:
            fitted["gemm_half_efficiency_channels"] = best[2]["gemm_half_efficiency_channels"]
        elif OP_NAMES[op] in best[2]["block_bytes_per_cycle"]:
            block_bw[OP_NAMES[op]] = best[2]["block_bytes_per_cycle"][OP_NAMES[op]]
    fitted["block_bytes_per_cycle"] = block_bw
    return fitted, errors


def _fused_log_error(job) -> float:
    run, spec = job
    return (math.log(predict_fused(run, spec)) - math.log(run["fused_us"])) ** 2


def _log_error(spec, runs, pool=None) -> float:
    jobs = [(r, spec) for r in runs]
    return fmean(pool.map(_fused_log_error, jobs) if pool else map(_fused_log_error, jobs))


def fit_fused(runs, spec, overheads=(0, 2500, 5000, 7500, 10000), usable=(0.5, 0.75, 1.0),
              sample: int = 24, pool=None) -> tuple[dict, float]:
    """Stage 3: grid over block overhead and usable L2 on a sample of training fused runs."""
    train = [r for r in runs if r.get("split") == "train" and r.get("fused_us")]
    step = max(1, len(train) // sample)
    chosen = train[::step][:sample]
    best = None
    for oh in overheads:
        for u in usable:
            err = _log_error(spec.with_model(task_overhead_cycles=oh, l2_usable_fraction=u), chosen, pool)
            if best is None or err < best[1]:
                best = ({"task_overhead_cycles": oh, "l2_usable_fraction": u}, err)
    return best
