"""Measured per-block timelines as files: what `bench --trace` writes and `compare` reads.

A measured trace is a Perfetto / Chrome trace in the format `megasim simulate
--trace` writes (`megasim.app.perfetto.trace_events`), with one process per
launch: pid 0 the megakernel, pid 1 the four non-fused kernels. Its
`otherData` carries the measurement header and the problem the run was made
of (layer, variant, partition, mapping strategy, options and order,
scheduling mode), so `compare` can simulate the very same run. Records are
read back from the block slices (start, end, SM, block, task, op) and their
spin slices (ready), whichever track layout the writer chose: the SM comes
from the slice's `sm` argument where it has one, else from its track id.

The calibration's raw trace (`scenarios/calibrations/raw/<gpu>_trace_resnet2.json`:
a header, the problem and a list of record dicts) is read too, as a fused
launch.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from megasim.app.perfetto import trace_events
from megasim.contract.errors import MegasimError
from megasim.contract.files import read_json, write_then_rename
from megasim.contract.problem import OP_NAMES
from megasim.contract.records import empty_records, records_from_dicts

LAUNCH_NAMES = {"fused": "megakernel", "nonfused": "non-fused kernels"}
PROBLEM_KEYS = ("layer", "variant", "partition", "strategy", "params", "mode", "order")


def problem_meta(graph, mapping, mode: str) -> dict:
    """The run a trace is of, as `compare` rebuilds it (the order too, so a mapping file's is exact)."""
    return {"layer": asdict(graph.layer), "variant": graph.variant.m, "partition": graph.partition.to_dict(),
            "strategy": mapping.strategy, "params": dict(mapping.params), "mode": mode,
            "order": [int(t) for t in mapping.order]}


def write_measured_trace(path, launches: dict[str, np.ndarray], meta: dict) -> Path:
    """One trace file, a process per launch ("fused", "nonfused"), written atomically."""
    events = []
    for pid, (launch, records) in enumerate(launches.items()):
        doc = trace_events(records, {"name": f"{LAUNCH_NAMES.get(launch, launch)} (measured)"})
        for event in doc["traceEvents"]:
            event["pid"] = pid
        events += doc["traceEvents"]
    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "otherData": {**meta, "source": "measured", "launches": list(launches)}}
    with write_then_rename(path) as tmp:
        tmp.write_text(json.dumps(doc, separators=(",", ":"), default=_plain))
    return Path(path)


def _plain(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _records_of(events: list[dict]) -> np.ndarray:
    """TB_RECORDs from one process's block and spin slices, sorted by block."""
    ops = {name: int(op) for op, name in OP_NAMES.items()}
    blocks = [e for e in events if e.get("ph") == "X" and e.get("cat") == "block"]
    ready = {e["args"]["block"]: e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and e.get("cat") == "spin"}
    rec = empty_records(len(blocks))
    for i, e in enumerate(blocks):
        args = e["args"]
        start = float(e["ts"])
        rec[i] = (args["block"], args["task"], ops[args["op"]], args.get("sm", e["tid"]),
                  args.get("dispatch_us", start), start, ready.get(args["block"], start), start + float(e["dur"]))
    return rec[np.argsort(rec["block"], kind="stable")]


def read_measured(path) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, {launch: records}) of a `bench --trace` file or a calibration raw trace."""
    doc = read_json(path)
    try:
        if isinstance(doc, dict) and "traceEvents" in doc:
            meta = dict(doc.get("otherData") or {})
            names = meta.get("launches") or ["fused"]
            by_pid: dict[int, list] = {}
            for e in doc["traceEvents"]:
                by_pid.setdefault(int(e.get("pid", 0)), []).append(e)
            launches = {names[pid]: _records_of(ev) for pid, ev in sorted(by_pid.items()) if pid < len(names)}
        elif isinstance(doc, dict) and "records" in doc:
            meta = {k: v for k, v in doc.items() if k != "records"}
            launches = {"fused": records_from_dicts(doc["records"])}
        else:
            raise MegasimError("neither trace events nor a records list")
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise MegasimError(f"{path}: not a measured trace ({type(exc).__name__}: {exc})") from None
    except MegasimError as exc:
        raise MegasimError(f"{path}: not a measured trace ({exc})") from None
    missing = [k for k in ("layer", "partition") if k not in meta]
    if missing:
        raise MegasimError(f"{path}: the trace does not say which run it is (no {', '.join(missing)}); "
                           "traces from `megasim bench --trace` do")
    return meta, launches


__all__ = ["LAUNCH_NAMES", "PROBLEM_KEYS", "problem_meta", "write_measured_trace", "read_measured"]
