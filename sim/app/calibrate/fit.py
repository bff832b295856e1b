"""Fit the model's free constants to measurements, in three stages.

1. Hardware, straight from the microbenchmarks: the SM clock under load,
   achieved DRAM and L2 bandwidth, atomic and poll latency, launch gap, block
   dispatch latency and rate, the usable L2 (the capacity knee).
2. Per task type, from its non-fused kernels each timed alone (training paper
   layers and a sample of training corpus shapes): compute efficiency, the
   latency of a serial step, a block's fixed cycles and (transforms) DRAM
   access efficiency, fitted jointly (Powell, then Nelder-Mead; scipy) on the
   mean squared log error.
3. What only the megakernel shows (block overhead, usable L2 under fusion):
   a small grid search minimising the log error of fused time on a sample of
   the training runs.

Held-out runs are never read here. Stages 2 and 3 cost one simulation per
probe; the training set is sized so a fit takes minutes on two cores.
"""
from __future__ import annotations

import hashlib
import math
from statistics import fmean

import numpy as np

from megasim.app.calibrate.jobs import largest_first
from megasim.app.calibrate.predict import measured_kernel, predict_fused, predict_kernel, predict_kernel_in_graph
from megasim.contract.problem import OP_NAMES, Op


def launch_gap_us(boundary_us: float, dispatch_latency_cycles: float | None, clock_mhz: float) -> float:
    """`launch_overhead_us` from an in-graph kernel boundary: the microbenchmark's slope per launch is what it
    takes from one kernel's last block ending to the next one's first block *starting* (measured on an H200,
    0.74-0.93 us whatever ran before: docs/results/graph_timing_h200). The engine waits `launch_overhead_us` and then
    dispatches, and the block starts `tb_dispatch_latency_cycles` later, so the boundary less that latency is
    the launch gap; charging the whole boundary counted the dispatch latency twice (docs/decisions.md)."""
    latency_us = (dispatch_latency_cycles or 0) / clock_mhz
    return round(max(boundary_us - latency_us, 0.0), 4)


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
    disp = micro.get("dispatch_summary", {})
    if disp.get("latency_cycles"):
        hw["tb_dispatch_latency_cycles"] = int(round(disp["latency_cycles"]))
    launch = micro.get("launch", {})
    if launch.get("graph_us"):
        hw["launch_overhead_us"] = launch_gap_us(float(launch["graph_us"]), hw.get("tb_dispatch_latency_cycles"), clock)
    if launch.get("plain_us"):
        hw["first_launch_us"] = float(launch["plain_us"])
    if disp.get("blocks_per_us"):
        hw["tb_dispatch_interval_cycles"] = round(clock / disp["blocks_per_us"], 3)
    if disp.get("first_wave_lead_sms") is not None:
        hw["first_wave_lead_sms"] = list(disp["first_wave_lead_sms"])
    return hw, model


def _kernel_log_error(job) -> float:
    run, op, spec = job
    measured, graphed = measured_kernel(run, op)
    predicted = (predict_kernel_in_graph if graphed else predict_kernel)(run, op, spec)
    return (math.log(predicted) - math.log(measured)) ** 2


def _is_corpus(run) -> bool:
    return run["layer"]["name"].startswith("gen-")


def _balanced_mean(runs, errors) -> float:
    """Paper layers and corpus shapes weigh half each: the corpus keeps the fit to physics that carries to
    unseen shapes, the paper layers keep it where the paper's questions are asked."""
    groups = [[e for r, e in zip(runs, errors) if _is_corpus(r) == corpus] for corpus in (False, True)]
    return fmean(fmean(g) for g in groups if g)


def _blocks(run, op: Op) -> int:
    """How many blocks the run's `op` kernel launches: what simulating it costs."""
    from megasim.app.calibrate.predict import graph_of
    return int((graph_of(run).op == op).sum())


def _kernel_error(runs, op: Op, spec, pool=None) -> float:
    jobs = [(r, op, spec) for r in runs]
    if pool is None:
        return _balanced_mean(runs, [_kernel_log_error(j) for j in jobs])
    return _balanced_mean(runs, largest_first(pool, _kernel_log_error, jobs, [_blocks(r, op) for r in runs]))


def _with_efficiency(spec, op: Op, eff: float, **extra):
    return spec.with_model(compute_efficiency={**spec.model.compute_efficiency, OP_NAMES[op]: eff}, **extra)


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


def stage2_sample(runs, per_variant: int = 8, max_tasks: int = 40_000) -> list[dict]:
    """The kernels stage 2 fits: every training paper layer, plus up to `per_variant` training corpus shapes
    of each variant (in name-hash order, so the choice is fixed) small enough to simulate quickly. The
    variants must be there: F(4) alone cannot tell a transform's compute rate from its DRAM rate."""
    from megasim.app.calibrate.corpus import split_of
    from megasim.app.calibrate.predict import graph_of
    by_layer = {}
    for run in runs:
        if run.get("split") == "train" and run.get("nonfused_kernels_us") and consistent(run):
            by_layer.setdefault((run["layer"]["name"], str(run["partition"])), run)
    paper = [r for k, r in sorted(by_layer.items()) if not k[0].startswith("gen-")]
    corpus = sorted((r for k, r in by_layer.items() if k[0].startswith("gen-")),
                    key=lambda r: hashlib.sha256(r["layer"]["name"].encode()).hexdigest())
    chosen, per = [], {}
    for run in corpus:
        v = run.get("variant", 4)
        if per.get(v, 0) < per_variant and split_of(run["layer"]["name"]) == "train" \
                and graph_of(run).num_tasks <= max_tasks:
            chosen.append(run)
            per[v] = per.get(v, 0) + 1
    return paper + chosen


HOST_HIDDEN_US = 20.0
STAGE2_EVALS = 120
OVERHEADS = (0, 2500, 5000, 10000, 15000)
USABLE = (0.25, 0.5, 0.75, 1.0)


def fit_probes() -> int:
    """Stage 2's and 3's budget of simulated probes (Powell's, then Nelder-Mead's half, per task type; the
    stage 3 grid), which a progress bar counts."""
    return len(Op) * (STAGE2_EVALS + STAGE2_EVALS // 2) + len(OVERHEADS) * len(USABLE)


def _fit_op(layers, op, spec, pool, evals: int = STAGE2_EVALS, tick=None):
    """Compute efficiency, serial step latency, a block's fixed cycles and (transforms)
    DRAM access efficiency of one task type, jointly: Powell within bounds (efficiency on a log scale,
    latencies in thousands of cycles, DRAM access in [0.3, 1]), then Nelder-Mead from its result, which can
    move off the axes Powell searches along. Jointly, because with latency on top of throughput they trade against each
    other: one coordinate at a time, a low efficiency that stands in for missing latency makes every
    latency step look worse, and the descent stalls there."""
    from scipy.optimize import minimize
    name = OP_NAMES[op]
    transform = op != Op.GEMM
    start = [math.log(spec.model.compute_efficiency.get(name, 0.1)), spec.model.step_cycles.get(name, 0.0) / 1000,
             spec.model.block_fixed_cycles.get(name, 0.0) / 1000]
    start += [spec.model.dram_access_efficiency.get(name, 1.0)] if transform else []
    seen = {}

    def unpack(x):
        """log efficiency, latencies in thousands of cycles, DRAM access efficiency."""
        return math.exp(x[0]), x[1] * 1000, x[2] * 1000, (x[-1] if transform else None)

    def at(x):
        # the simulation is deterministic, so a point the optimisers come back to is not simulated again
        key = tuple(float(v) for v in x)
        if key in seen:
            return seen[key]
        eff, step, fixed, dram = unpack(x)
        s = _with_efficiency(spec, op, eff, step_cycles={**spec.model.step_cycles, name: step},
                             block_fixed_cycles={**spec.model.block_fixed_cycles, name: fixed},
                             dram_access_efficiency={**spec.model.dram_access_efficiency, **({name: dram} if transform else {})})
        if tick:
            tick()
        seen[key] = _kernel_error(layers, op, s, pool)
        return seen[key]

    bounds = [(math.log(0.005), 0.0), (0.0, 20.0), (0.0, 30.0)] + [(0.3, 1.0)] * transform
    best = minimize(at, start, method="Powell", bounds=bounds, options={"maxfev": evals, "xtol": 1e-3, "ftol": 1e-6})
    moves = np.array([-0.5, 0.5, 0.5, -0.1])[:len(start)]  # then Nelder-Mead from there: it leaves the axes
    simplex = np.clip(np.vstack([best.x, best.x + np.diag(moves)]), *np.array(bounds).T)
    polished = minimize(at, best.x, method="Nelder-Mead", bounds=bounds,
                        options={"maxfev": evals // 2, "xatol": 1e-3, "fatol": 1e-6, "initial_simplex": simplex})
    best = polished if polished.fun < best.fun else best
    eff, step, fixed, dram = unpack(best.x)
    return float(best.fun), eff, (round(dram, 4) if transform else None), round(step, 1), round(fixed, 1)


def consistent(run, floor_us: float = HOST_HIDDEN_US, slack: float = 1.25) -> bool:
    """Whether a run's kernel times agree with its graph-captured total: the kernels the host cannot hide
    (`host_hidden`) must not add up to more than `slack` times the whole pipeline. None of the H200's runs
    fails this; three of the H100 corpus do (one with four ~80 us kernels in a 36 us pipeline), a glitch in
    the per-kernel timing that stage 2 would otherwise fit as physics."""
    if run.get("nonfused_kernels_graph_us"):
        return True
    hidden = sum(t for t in run["nonfused_kernels_us"] if t >= floor_us)
    return hidden <= slack * run["nonfused_us"]


def host_hidden(layers, op: Op, floor_us: float) -> list:
    """The kernels whose in-pipeline time says something about the GPU.

    A kernel's time in the pipeline is measured between events with the next launch issued from Python
    (`gpu_runs._stage_times`). Below about 20 us the host, not the GPU, sets it: on the corpus the four
    kernels' event times sum to 1.13x the graph-captured total (up to 2.1x on the smallest shapes), and no
    kernel times under 3.6-7.2 us whatever its work. Fitted as GPU physics, that host time became fixed
    cycles on every block and made the non-fused prediction 10% slow, the fusion-wins lean. So stage 2
    fits a task type on its kernels of at least `floor_us` (all of them if fewer than three are). A kernel
    timed inside a CUDA graph (`nonfused_kernels_graph_us`) has no host in its time and is always kept."""
    kept = [r for r in layers if r.get("nonfused_kernels_graph_us") or r["nonfused_kernels_us"][op] >= floor_us]
    return kept if len(kept) >= 3 else layers


def _pinned_op(layers, op, spec, pool, law: dict, tick=None, evals: int = 16):
    """A task type whose constants were measured (a block law of a trace sample): its error, and for a
    transform its DRAM access efficiency, which a block law does not give, by a bounded 1-D search."""
    from scipy.optimize import minimize_scalar
    name = OP_NAMES[op]
    s = _with_efficiency(spec, op, law["compute_efficiency"], step_cycles={**spec.model.step_cycles, name: law["step_cycles"]},
                         block_fixed_cycles={**spec.model.block_fixed_cycles, name: law["block_fixed_cycles"]})
    if op == Op.GEMM:
        return (_kernel_error(layers, op, s, pool), law["compute_efficiency"], None, law["step_cycles"],
                law["block_fixed_cycles"])

    def at(d):
        if tick:
            tick()
        return _kernel_error(layers, op, s.with_model(dram_access_efficiency={**s.model.dram_access_efficiency, name: d}), pool)

    best = minimize_scalar(at, bounds=(0.3, 1.0), method="bounded", options={"maxiter": evals, "xatol": 2e-3})
    return float(best.fun), law["compute_efficiency"], round(float(best.x), 4), law["step_cycles"], \
        law["block_fixed_cycles"]


def fit_compute_efficiency(runs, spec, evals: int = STAGE2_EVALS, pool=None, log=None,
                           host_floor_us: float = HOST_HIDDEN_US, tick=None, pinned: dict | None = None):
    """Stage 2: per task type, the constants minimising the log error of its kernel over `stage2_sample`
    (its host-hidden kernels): compute efficiency, the latency of a block's serial step (`step_cycles`), a
    block's fixed cycles and, for a transform, the fraction of the DRAM stream rate its access pattern
    reaches (`dram_access_efficiency`). A task type in `pinned` (op -> efficiency, step and fixed cycles,
    measured from traces: `trace_law.gemm_law`) keeps those and is not searched."""
    sample = stage2_sample(runs)
    fitted, errors, dram, step, fixed = {}, {}, {}, {}, {}
    for op in Op:
        layers = host_hidden(sample, op, host_floor_us)
        if pinned and op in pinned:
            err, eff, d, c, f = _pinned_op(layers, op, spec, pool, pinned[op], tick)
        else:
            err, eff, d, c, f = _fit_op(layers, op, spec, pool, evals, tick)
        name = OP_NAMES[op]
        if d is not None:
            dram[name] = d
        fixed[name] = f
        step[name] = c
        errors[name] = round(math.sqrt(err), 4)
        fitted[name] = round(eff, 4)
        if log:
            log(f"  stage 2 {name}: efficiency {fitted[name]}, step {c} cycles, fixed {f} cycles, DRAM access {d} "
                f"(rms log error {errors[name]}, {len(layers)} kernels)")
    fitted["dram_access_efficiency"] = dram
    fitted["step_cycles"] = step
    fitted["block_fixed_cycles"] = fixed
    return fitted, errors


def _fused_log_error(job) -> float:
    run, spec = job
    return (math.log(predict_fused(run, spec)) - math.log(run["fused_us"])) ** 2


def _log_error(spec, runs, pool=None) -> float:
    jobs = [(r, spec) for r in runs]
    if pool is None:
        return _balanced_mean(runs, [_fused_log_error(j) for j in jobs])
    from megasim.app.calibrate.predict import graph_of
    return _balanced_mean(runs, largest_first(pool, _fused_log_error, jobs, [graph_of(r).num_tasks for r in runs]))


def fit_fused(runs, spec, overheads=OVERHEADS, usable=USABLE,
              sample: int = 24, pool=None, tick=None) -> tuple[dict, float]:
    """Stage 3: block overhead and usable L2 on a grid, minimising the log error of fused time on a sample
    of training fused runs, half from the paper layers and half from the corpus where both are given.

    The grid is walked, not swept: from its middle to the best neighbour (one step along either axis) while
    that is better. Where the error has one minimum on the grid, the walk ends where the sweep would, after
    about half the points (each point simulates every run of the sample)."""
    from megasim.app.calibrate.predict import graph_of
    train = [r for r in runs if r.get("split") == "train" and r.get("fused_us") and graph_of(r).num_tasks <= 40_000]
    paper, corpus = [r for r in train if not _is_corpus(r)], [r for r in train if _is_corpus(r)]
    share = sample // 2 if paper and corpus else sample
    chosen = [r for part in (paper, corpus) if part for r in part[::max(1, len(part) // share)][:share]]
    seen = {}

    def error(i, j):
        if (i, j) not in seen:
            seen[i, j] = _log_error(spec.with_model(task_overhead_cycles=overheads[i], l2_usable_fraction=usable[j]),
                                    chosen, pool)
            if tick:
                tick()
        return seen[i, j]

    here = (len(overheads) // 2, len(usable) // 2)
    while True:
        near = [(here[0] + di, here[1] + dj) for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1))]
        near = [(i, j) for i, j in near if 0 <= i < len(overheads) and 0 <= j < len(usable)]
        step = min(near, key=lambda p: error(*p), default=here)
        if error(*step) >= error(*here):
            break
        here = step
    return {"task_overhead_cycles": overheads[here[0]], "l2_usable_fraction": usable[here[1]]}, error(*here)
