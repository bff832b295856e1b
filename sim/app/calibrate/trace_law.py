"""What per-block hardware traces measure directly, for the fit (docs/decisions.md, "The resident form").

Two things a kernel's total time cannot tell apart, and a trace of its blocks can:

- **The GEMM block law.** A GEMM block's work (ready to end) is `fixed + steps x step + n x FLOPs / (eff x
  SM peak)` cycles, with n the GEMM blocks working on its SM over its life, itself included. Every block of
  a non-fused GEMM kernel has the same neighbours, so the kernel's time fixes only one mix of latency and
  throughput; in a trace sample (fused and non-fused launches of many shapes) blocks run beside 1 to 5
  others, and least squares on their relative errors, every launch weighted alike, separates the three.
  It is the law `resident_sharing` simulates (`megasim.engine.laws.resident_sharing`).
- **The megakernel's cost per task.** From a block's start (before its ticket) to ready, for blocks whose
  counters were all zero when they started, by how many counters it polls; and the gap on an SM between a
  block's end and the next block's start there. They give `task_overhead_cycles` (what a task costs from its
  slot freeing to its first poll, less the dispatch latency the spec already charges) and
  `wait_check_cycles` (each counter read).

A trace sample is the packed archive `docs/results/trace_sample/pack.py` writes: per case and launch, each
block's task, op, SM and its start, ready and end in ticks of %globaltimer's 32 ns, stored as differences.
"""
from __future__ import annotations

import itertools
import json
import zipfile
from pathlib import Path

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import NO_COUNTER, build_graph
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.work import issued_flops, serial_steps

TICK_US = 0.032  # %globaltimer's resolution on Hopper: every measured time is a multiple of it
FIELDS = ("task", "op", "sm", "start_us", "ready_us", "end_us")
SAMPLE_PER_LAUNCH = 4000
# How a GEMM shares an SM with blocks of other types, read off the trace samples (docs/results/trace_sample/
# h100/neighbours.md: a transform slows a GEMM like 0.5 of a GEMM, and an input beside working GEMMs takes
# 1.2-1.6x its work beside none): the laws' declared readings, the same for every GPU. The input stretch is
# the H200's reading, 0.2 (at 0.25 one layer fewer keeps Spearman >= 0.8, at 0.3 one winner fewer is called
# right, 2026-11-27). The committed H100 profile holds 0.4, fitted by hand to keep ResNet-1's pick
# (docs/decisions.md, "A GEMM weighs 2 in an SM's issue"; that profile is kept as fitted).
NEIGHBOUR_READINGS = {"resident_sharing": {"issue_weight": {"gemm": 2.0}},
                      "gemm_neighbour_stretch": {"stretch": {"input_transform": 0.2}}}


def default_sample(raw, gpu: str):
    """`<gpu>_trace_sample.npz` in `raw`, else the first other GPU's sample there by name, else the GPU's own
    path (so the error names it). A block law describes one SM's issue and latency, so a GPU with the same SM
    (the H200 and the H100 share the GH100 SM and clock) may borrow another's: the H200 did until its own was
    measured (2026-11-26), and its GEMM laws came out within 0.3% of the H100's efficiency (the output law's chip
    rate follows the H200's faster DRAM)."""
    own = Path(raw) / f"{gpu}_trace_sample.npz"
    others = sorted(Path(raw).glob("*_trace_sample.npz"))
    return own if own.exists() or not others else others[0]


def _ticks(key: str, values: np.ndarray) -> np.ndarray:
    """One packed field as int64; a float field with a NaN or an infinity is refused (casting it would only warn)."""
    if not np.issubdtype(values.dtype, np.integer) and not np.all(np.isfinite(values)):
        raise ValueError(f"{key} holds a value that is not a finite number")
    return values.astype(np.int64)


def load_sample(path) -> tuple[dict, dict]:
    """(problem by case, {case: {launch: {field: array}}}) from a packed trace sample, times in us."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["__meta__"]).decode())
            arrays = {key: _ticks(key, z[key]) for key in z.files if key != "__meta__"}
        out: dict = {}
        for key, values in arrays.items():
            case, launch, field = key.split("/")
            out.setdefault(case, {}).setdefault(launch, {})[field] = values
        if not out or set(out) != set(meta) or any(set(r) != set(FIELDS) for c in out.values() for r in c.values()):
            raise ValueError("its cases, launches or fields do not match")
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile) as exc:
        raise MegasimError(f"{path}: not a packed trace sample (docs/results/trace_sample/pack.py): "
                           f"{exc or type(exc).__name__}") from None
    from megasim.app.calibrate.raw import check_sample
    check_sample(meta, out, path)
    for launches in out.values():
        for rec in launches.values():
            rec["start_us"] = np.cumsum(rec["start_us"])
            rec["ready_us"] = rec["start_us"] + rec["ready_us"]
            rec["end_us"] = rec["ready_us"] + rec["end_us"]
            for f in ("start_us", "ready_us", "end_us"):
                rec[f] = rec[f] * TICK_US
    return meta, out


def graph_of(problem: dict):
    return build_graph(Layer(**problem["layer"]), WinogradVariant(problem.get("variant", 4)),
                       Partition(**problem["partition"]))


_CASE_TERMS: dict = {}
_CASE_TERMS_KEPT = 256


def case_terms(problem: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(issued FLOPs, serial steps, bytes read and written, GEMM body) per task of a case's graph, built once per
    layer, variant and partition (the laws read every launch of every case, several times a fit); read-only."""
    try:
        key = json.dumps([problem["layer"], problem.get("variant", 4), problem["partition"]], sort_keys=True)
    except TypeError:  # not plain JSON values: build it afresh
        key = None
    terms = _CASE_TERMS.get(key) if key is not None else None
    if terms is None:
        from megasim.contract.resources import gemm_body
        g = graph_of(problem)
        flops, steps, moved = issued_flops(g), serial_steps(g), sum(g.bytes_per_task())
        for a in (flops, steps, moved):
            a.setflags(write=False)
        terms = flops, steps, moved, gemm_body(g.layer, g.partition)
        if key is not None:
            if len(_CASE_TERMS) >= _CASE_TERMS_KEPT:
                _CASE_TERMS.pop(next(iter(_CASE_TERMS)))
            _CASE_TERMS[key] = terms
    return terms


def overlap(a: float, b: float, ready: np.ndarray, end: np.ndarray) -> float:
    """How many of the blocks (ready, end) worked during [a, b], each weighted by the share of it they did. The laws
    take it for many blocks at once (`overlaps`, `sm_overlaps`), to the same bit."""
    return float((np.clip(np.minimum(end, b) - np.maximum(ready, a), 0, None) / (b - a)).sum())


_OVERLAP_CELLS = 1 << 17  # the most (block, neighbour) pairs held at once


def _shares(a: np.ndarray, b: np.ndarray, ready: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`overlap(a[j], b[j], ready[j], end[j])` for every row j (`ready` and `end` a row each, or one row for all),
    the same numbers bit for bit: the same operations on the same pairs, each row summed along its contiguous
    axis, as numpy sums one array (pairwise)."""
    aa, bb = a[:, None], b[:, None]
    share = np.minimum(end, bb)
    share -= np.maximum(ready, aa)
    np.clip(share, 0, None, out=share)
    share /= bb - aa
    return share.sum(axis=1)


def overlaps(a: np.ndarray, b: np.ndarray, ready: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`overlap(a[j], b[j], ready, end)` for every j, bit for bit."""
    out = np.empty(len(a))
    step = max(1, _OVERLAP_CELLS // max(len(ready), 1))
    for lo in range(0, len(a), step):
        out[lo:lo + step] = _shares(a[lo:lo + step], b[lo:lo + step], ready[None, :], end[None, :])
    return out


def sm_overlaps(rows: np.ndarray, pool: np.ndarray, sm: np.ndarray, ready: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`overlap(ready[j], end[j], ready[i], end[i])` for each block j of `rows`, i the blocks of `pool` on j's SM
    in the order `pool` lists them, bit for bit: the rows whose SMs hold as many of `pool`'s blocks make one
    matrix, each row its SM's blocks."""
    out = np.zeros(len(rows))  # an SM without blocks in `pool`: none worked beside
    if not len(rows) or not len(pool):
        return out
    by_sm = pool[np.argsort(sm[pool], kind="stable")]  # each SM's blocks together, in pool's order
    sms, first, count = np.unique(sm[by_sm], return_index=True, return_counts=True)
    at = np.searchsorted(sms, sm[rows]).clip(0, len(sms) - 1)
    width = np.where(sms[at] == sm[rows], count[at], 0)
    ready_by_sm, end_by_sm = ready[by_sm], end[by_sm]
    for w in np.unique(width[width > 0]):
        sel = np.flatnonzero(width == w)
        ready_w = np.lib.stride_tricks.sliding_window_view(ready_by_sm, w)  # row k: the w blocks from k on
        end_w = np.lib.stride_tricks.sliding_window_view(end_by_sm, w)
        for lo in range(0, len(sel), max(1, _OVERLAP_CELLS // w)):
            part = sel[lo:lo + max(1, _OVERLAP_CELLS // w)]
            j, start = rows[part], first[at[part]]
            out[part] = _shares(ready[j], end[j], ready_w[start], end_w[start])
    return out


def gemm_corunners(rec, rng, with_tasks: bool = False):
    """(work us, overlap-weighted GEMM blocks working on the same SM, itself included) of up to
    `SAMPLE_PER_LAUNCH` GEMM blocks of one launch, and their tasks if asked."""
    op, sm, rd, en = rec["op"], rec["sm"], rec["ready_us"], rec["end_us"]
    every = np.where(op == Op.GEMM)[0]
    gemms = every
    if len(gemms) > SAMPLE_PER_LAUNCH:
        gemms = rng.choice(gemms, SAMPLE_PER_LAUNCH, replace=False)
    gemms = gemms[~(en[gemms] <= rd[gemms])]  # a block with no work has no share to weigh
    if not len(gemms):
        return (np.array([]),) * (3 if with_tasks else 2)
    out = en[gemms] - rd[gemms], sm_overlaps(gemms, every, sm, rd, en)
    return (*out, rec["task"][gemms]) if with_tasks else out


def _fit_blocks(xs, ys, ws, tags) -> tuple[np.ndarray, dict]:
    """Least squares of block work (`ys`) on the law's terms (`xs`), weighted by `ws` (relative error, every
    launch alike): (coefficients, {(case, launch): median relative error})."""
    x, y, w = np.array(xs), np.array(ys), np.array(ws)
    coef = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)[0]
    return coef, _median_errors(tags, x @ coef / y - 1)


def _median_errors(tags, relative) -> dict:
    """{(case, launch): the median of its blocks' relative errors}; a launch's rows come together."""
    runs: dict = {}
    at = 0
    for tag, run in itertools.groupby(tags):
        size = sum(1 for _ in run)
        runs.setdefault(tag, []).append(relative[at:at + size])
        at += size
    return {t: float(np.median(np.concatenate(v))) for t, v in runs.items()}


def _gemm_rows(meta: dict, traces: dict, clock_mhz: float, sm_peak: float, seed: int = 0):
    """The GEMM block law's least-squares rows: terms [1, steps, n x issued FLOPs / peak], work in cycles,
    weights (relative error, every launch alike) and (case, launch) tags."""
    rng = np.random.default_rng(seed)
    xs, ys, ws, tags = [np.zeros((0, 3))], [np.zeros(0)], [np.zeros(0)], []
    for case, problem in meta.items():
        flops, steps, _, _ = case_terms(problem)
        for launch, rec in traces[case].items():
            work, n, tasks = gemm_corunners(rec, rng, with_tasks=True)
            if not len(work):
                continue
            xs.append(np.column_stack([np.ones(len(work)), steps[tasks], flops[tasks] * n / sm_peak]))
            ys.append(work * clock_mhz)
            ws.append(1.0 / (work * clock_mhz * np.sqrt(len(work))))
            tags += [(case, launch)] * len(work)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws), tags


def gemm_law(meta: dict, traces: dict, clock_mhz: float, sm_peak: float, seed: int = 0):
    """(fixed cycles, step cycles, efficiency, {(case, launch): median relative error}) of the GEMM block law."""
    coef, errors = _fit_blocks(*_gemm_rows(meta, traces, clock_mhz, sm_peak, seed))
    return float(coef[0]), float(coef[1]), float(1 / coef[2]), errors


def launches_of(traces: dict, kind: str) -> dict:
    """The sample with only its launches of one kind ("fused": every megakernel mode; "nonfused"): the
    megakernel's GEMM blocks take 0-6% longer than the GEMM kernel's for the same work, so each gets its own
    body laws (`gemm_body_laws`' `fused` table; docs/decisions.md, "The megakernel's GEMM blocks have laws of their own")."""
    return {case: {k: v for k, v in launches.items() if k == kind} for case, launches in traces.items()}


def gemm_body_laws(meta: dict, traces: dict, clock_mhz: float, sm_peak: float, least: int = 3) -> dict:
    """{body: (fixed cycles, step cycles, efficiency, errors)}: `gemm_law` fitted on each GEMM body's cases
    alone (`megasim.contract.resources.gemm_body`), for the bodies with at least `least` cases. A "-scalar"
    body keeps its vector sibling's efficiency and fixed cycles (the one law's where the sibling has none)
    and fits its step alone, from however few cases: loading a float at a time changes how long a step
    waits, not the arithmetic. On the H100 sample the median per-launch error falls from 4.3% under one law
    to 1.1% (128 threads, 8 x 4), 3.1% (8 x 8) and 4.4% (96 threads, 8 x 4); the 8 x 8 body pays 8,700 fixed
    cycles a block against 3,600, and a scalar step takes 1.4-2 vector ones (docs/results/trace_sample/h100/
    gemm_body_laws.json)."""
    cases: dict = {}
    for case, problem in meta.items():
        cases.setdefault(case_terms(problem)[3], []).append(case)
    pick = lambda names: ({c: meta[c] for c in names}, {c: traces[c] for c in names})  # noqa: E731
    laws = {body: gemm_law(*pick(names), clock_mhz, sm_peak) for body, names in sorted(cases.items())
            if not body.endswith("-scalar") and len(names) >= least}
    for body, names in sorted(cases.items()):
        if body.endswith("-scalar"):
            sibling = body[:-len("-scalar")]
            fixed, _, eff, _ = laws[sibling] if sibling in laws else gemm_law(meta, traces, clock_mhz, sm_peak)
            x, y, w, tags = _gemm_rows(*pick(names), clock_mhz, sm_peak)
            rest = y - fixed - x[:, 2] / eff
            step = float(np.sum(w * w * x[:, 1] * rest) / np.sum(w * w * x[:, 1] ** 2))
            laws[body] = (fixed, step, eff, _median_errors(tags, (fixed + x[:, 1] * step + x[:, 2] / eff) / y - 1))
    return dict(sorted(laws.items()))


def output_law(meta: dict, traces: dict, clock_mhz: float, sm_peak: float, seed: int = 0, per_launch: int = 800,
               op: Op = Op.OUTPUT_TRANSFORM):
    """(fixed cycles, step cycles, efficiency, chip bytes per cycle, {(case, launch): median relative error}) of
    the output block law `fixed + steps x step + n x FLOPs / (eff x peak) + m x bytes / chip rate`: n the blocks
    of any type working on its SM, m the output blocks working on the whole chip (both overlap-weighted, itself
    included), bytes what it reads and writes. Fitted as `gemm_law` is. An output block is slowed by its SM's
    blocks and by the chip's other outputs alike (docs/results/trace_sample/h100/analysis.md): either term alone
    fits far worse. `op` fits the
    same law to another transform's blocks, m then counting that type (the input transform's fits worse:
    docs/decisions.md, "Tried and not adopted")."""
    rng = np.random.default_rng(seed)
    xs, ys, ws, tags = [np.zeros((0, 4))], [np.zeros(0)], [np.zeros(0)], []
    for case, problem in meta.items():
        flops, steps, moved, _ = case_terms(problem)
        for launch, rec in traces[case].items():
            sm, rd, en, task = rec["sm"], rec["ready_us"], rec["end_us"], rec["task"]
            outs = np.where(rec["op"] == op)[0]
            picked = rng.choice(outs, per_launch, replace=False) if len(outs) > per_launch else outs
            picked = picked[en[picked] > rd[picked]]
            if not len(picked):
                continue
            a, b, t = rd[picked], en[picked], task[picked]
            n = sm_overlaps(picked, np.arange(len(sm)), sm, rd, en)
            m = overlaps(a, b, rd[outs], en[outs])
            xs.append(np.column_stack([np.ones(len(picked)), steps[t], n * flops[t] / sm_peak, m * moved[t]]))
            ys.append((b - a) * clock_mhz)
            ws.append(1.0 / ((b - a) * clock_mhz * np.sqrt(len(picked))))
            tags += [(case, launch)] * len(picked)
    xs, ys, ws = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    if len(ys) < 4:
        raise MegasimError("the trace sample has too few output-transform blocks to fit their law")
    coef, errors = _fit_blocks(xs, ys, ws, tags)
    return float(coef[0]), float(coef[1]), float(1 / coef[2]), float(1 / coef[3]), errors


def start_costs(graph, rec):
    """(start to ready in us, counters polled) of the blocks whose counters were all zero at their start."""
    task, st, rd, en = rec["task"], rec["start_us"], rec["ready_us"], rec["end_us"]
    zero = np.zeros(len(graph.counter_init))
    sig = graph.signals[task]
    has = sig != NO_COUNTER
    np.maximum.at(zero, sig[has], en[has])
    waits = graph.waits_on[task]
    polled = (waits != NO_COUNTER).sum(1)
    met = np.ones(len(task), bool)
    for k in range(2):
        c = waits[:, k]
        h = c != NO_COUNTER
        met[h] &= zero[c[h]] < st[h]
    return (rd - st)[met], polled[met]


def slot_gaps(rec):
    """For each block that started after another ended on its SM: its start less that latest end (us)."""
    out = []
    for s in np.unique(rec["sm"]):
        i = np.where(rec["sm"] == s)[0]
        ends = np.sort(rec["end_us"][i])
        k = np.searchsorted(ends, rec["start_us"][i]) - 1
        ok = k >= 0
        out.append(rec["start_us"][i][ok] - ends[k[ok]])
    g = np.concatenate(out) if out else np.zeros(0)
    return g[(g >= 0) & (g < 5)]


def task_costs(graph, rec, clock_mhz: float, dispatch_latency_cycles: float) -> dict:
    """`task_overhead_cycles` and `wait_check_cycles` of a static megakernel launch's trace: a task polling no
    counter is ready the slot gap plus its start-to-ready after its slot freed, of which the spec's dispatch
    latency is charged already; each polled counter adds the least-squares slope of start-to-ready on the
    counters polled."""
    sr, polled = start_costs(graph, rec)
    levels = [k for k in (0, 1, 2) if (polled == k).sum() >= 5]
    if 0 not in levels or len(levels) < 2:
        raise MegasimError("the trace has too few ready blocks polling 0 and 1-2 counters to measure a task's costs")
    med = {k: float(np.median(sr[polled == k])) for k in levels}
    slope = float(np.polyfit(levels, [med[k] for k in levels], 1)[0])
    base = (float(np.median(slot_gaps(rec))) + med[0]) * clock_mhz - dispatch_latency_cycles
    return {"task_overhead_cycles": int(round(max(base, 0.0))), "wait_check_cycles": round(max(slope, 0.0) * clock_mhz, 1)}
