"""Per-thread-block records -> Chrome/Perfetto trace-event JSON.

The trace reads like a profiler's: one process (the GPU) and one track per
resident block slot of each SM ("SM 12 slot 3"). Blocks that run side by side
on an SM cannot share a track, because the trace-event format wants the
slices of one thread to nest, and Perfetto drops or misdraws ones that
overlap; so each block goes to the lowest slot of its SM free at its start
(`resident_slots`, a greedy interval assignment), and a slot's blocks follow
one another. Inside a block's slice, a second slice marks the spin
(`start_us`..`ready_us`), the time the block held its slot waiting on a
dependency counter. Slices are coloured by task type through the trace-event
`cname` field and carry block, task, op and SM in their args. Counter tracks
give DRAM and FP32 utilisation over time when the caller passes them.

Times are written rounded to whole nanoseconds, so a slice that ends where
the next one on its track starts does not overlap it by a rounding error.
Both executors' records go through here.
"""
from __future__ import annotations

import heapq
import json
from pathlib import Path

import numpy as np

from megasim.io.writing import write_then_rename
from megasim.contract.problem import OP_NAMES, Op

# Reserved trace-viewer colour names (catapult's color_scheme), one per op.
OP_CNAMES = {Op.FILTER_TRANSFORM: "rail_animation", Op.INPUT_TRANSFORM: "rail_response",
             Op.GEMM: "thread_state_running", Op.OUTPUT_TRANSFORM: "thread_state_iowait"}
SPIN_CNAME = "thread_state_sleeping"
GPU_PID = 0
SLOTS_PER_SM = 1000  # tid = SM * SLOTS_PER_SM + slot: "SM 12 slot 3" is tid 12003
COUNTERS = (("dram", "DRAM"), ("fp32", "FP32"))  # tracks "DRAM utilisation (%)" and "FP32 utilisation (%)"


def op_name(op: int) -> str:
    try:
        return OP_NAMES[Op(op)]
    except ValueError:
        return f"op{op}"


def resident_slots(records: np.ndarray) -> tuple[np.ndarray, int]:
    """Per block, the lowest slot on its SM free at its start (a slot frees at its block's end); and the
    most slots any SM used."""
    slot_of = np.zeros(len(records), dtype=np.int32)
    order = np.lexsort((records["start_us"], records["sm"]))
    sms, starts, ends = records["sm"][order], records["start_us"][order], records["end_us"][order]
    most, i = 1, 0
    while i < len(order):
        j = i
        busy: list[tuple[float, int]] = []
        free: list[int] = []
        used = 0
        while j < len(order) and sms[j] == sms[i]:
            while busy and busy[0][0] <= starts[j]:
                heapq.heappush(free, heapq.heappop(busy)[1])
            slot = heapq.heappop(free) if free else used
            used = max(used, slot + 1)
            heapq.heappush(busy, (ends[j], slot))
            slot_of[order[j]] = slot
            j += 1
        most, i = max(most, used), j
    return slot_of, most


def _us(t: float) -> float:
    """Microseconds, rounded to whole nanoseconds."""
    return round(t * 1000.0) / 1000.0


def _tracks(records: np.ndarray, tids: np.ndarray) -> list[dict]:
    events = []
    for tid in np.unique(tids).tolist():
        sm, slot = divmod(tid, SLOTS_PER_SM)
        events.append({"ph": "M", "pid": GPU_PID, "tid": tid, "name": "thread_name",
                       "args": {"name": f"SM {sm} slot {slot}"}})
        events.append({"ph": "M", "pid": GPU_PID, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    return events


def _counters(utilisation: dict) -> list[dict]:
    """A "C" event per bin and counter, at the bin's start: percent of peak DRAM bandwidth or FP32 rate."""
    t = np.asarray(utilisation["t_us"], dtype=float)
    starts = t - (t[1] - t[0]) / 2 if len(t) > 1 else np.zeros_like(t)
    return [{"ph": "C", "pid": GPU_PID, "name": label, "ts": _us(float(ts)),
             "args": {"utilisation (%)": round(100.0 * float(v), 3)}}
            for key, label in COUNTERS if key in utilisation
            for ts, v in zip(starts.tolist(), utilisation[key])]


def trace_events(records: np.ndarray, meta: dict | None = None, utilisation: dict | None = None) -> dict:
    """The trace-event document for `records` (a TB_RECORD array) as a dict; `utilisation` is
    `RunStats.utilisation`'s bins, drawn as counter tracks."""
    meta = dict(meta or {})
    slots, _ = resident_slots(records)
    tids = records["sm"].astype(np.int64) * SLOTS_PER_SM + slots
    events = [{"ph": "M", "pid": GPU_PID, "name": "process_name", "args": {"name": str(meta.get("name", "GPU"))}}]
    events += _tracks(records, tids)
    for r, tid in zip(records.tolist(), tids.tolist()):
        block, task, op, sm, dispatch, start, ready, end = r
        name, ts = op_name(op), _us(start)
        args = {"block": block, "task": task, "op": name, "sm": sm, "dispatch_us": dispatch}
        events.append({"ph": "X", "pid": GPU_PID, "tid": tid, "name": name, "cat": "block", "ts": ts,
                       "dur": _us(_us(end) - ts), "cname": OP_CNAMES.get(op, "generic_work"), "args": args})
        if _us(ready) > ts:
            events.append({"ph": "X", "pid": GPU_PID, "tid": tid, "name": "spin", "cat": "spin", "ts": ts,
                           "dur": _us(_us(ready) - ts), "cname": SPIN_CNAME,
                           "args": {"block": block, "task": task, "op": name}})
    if utilisation:
        events += _counters(utilisation)
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def write_trace(records: np.ndarray, path, meta: dict | None = None, utilisation: dict | None = None) -> Path:
    """Write `records` (and, if given, utilisation counters) as trace-event JSON to `path`, atomically."""
    doc = trace_events(records, meta, utilisation)
    with write_then_rename(path) as tmp:
        with open(tmp, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"), default=_jsonable)
    return Path(path)


def _jsonable(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (Path, set, tuple)):
        return str(obj) if isinstance(obj, Path) else list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")
