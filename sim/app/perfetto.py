"""Per-thread-block records -> Chrome/Perfetto trace-event JSON.

The trace reads like a profiler's: one process (the GPU), one track per SM
(tid = SM id), and on each track a slice per block from `start_us` to
`end_us`. Inside it, a second slice marks the spin (`start_us`..`ready_us`),
the time the block held its slot waiting on a dependency counter, so the
nesting shows how much of each block was waiting. Slices are coloured by task
type through the trace-event `cname` field and carry block, task and op in
their args. Both executors' records go through here (sim/trace.py).

The file is written to a temporary name beside the target and renamed, so a
crash never leaves a truncated trace where a good one is expected.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from megasim.contract.files import write_then_rename

from megasim.contract.problem import OP_NAMES, Op

# Reserved trace-viewer colour names (catapult's color_scheme), one per op.
OP_CNAMES = {Op.FILTER_TRANSFORM: "rail_animation", Op.INPUT_TRANSFORM: "rail_response",
             Op.GEMM: "thread_state_running", Op.OUTPUT_TRANSFORM: "thread_state_iowait"}
SPIN_CNAME = "thread_state_sleeping"
GPU_PID = 0


def op_name(op: int) -> str:
    try:
        return OP_NAMES[Op(op)]
    except ValueError:
        return f"op{op}"


def trace_events(records: np.ndarray, meta: dict | None = None) -> dict:
    """The trace-event document for `records` (a TB_RECORD array) as a dict."""
    meta = dict(meta or {})
    events = [{"ph": "M", "pid": GPU_PID, "name": "process_name",
               "args": {"name": str(meta.get("name", "GPU"))}}]
    for sm in np.unique(records["sm"]).tolist():
        events.append({"ph": "M", "pid": GPU_PID, "tid": sm, "name": "thread_name",
                       "args": {"name": f"SM {sm}"}})
        events.append({"ph": "M", "pid": GPU_PID, "tid": sm, "name": "thread_sort_index",
                       "args": {"sort_index": sm}})
    for r in records.tolist():
        block, task, op, sm, dispatch, start, ready, end = r
        name = op_name(op)
        args = {"block": block, "task": task, "op": name, "dispatch_us": dispatch}
        events.append({"ph": "X", "pid": GPU_PID, "tid": sm, "name": name, "cat": "block",
                       "ts": start, "dur": end - start, "cname": OP_CNAMES.get(op, "generic_work"),
                       "args": args})
        if ready > start:
            events.append({"ph": "X", "pid": GPU_PID, "tid": sm, "name": "spin", "cat": "spin",
                           "ts": start, "dur": ready - start, "cname": SPIN_CNAME,
                           "args": {"block": block, "task": task, "op": name}})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def write_trace(records: np.ndarray, path, meta: dict | None = None) -> Path:
    """Write `records` as trace-event JSON to `path` (atomically); return the path."""
    doc = trace_events(records, meta)
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
