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

Both are checked the way every input file is (`megasim.io.schema`):
the problem's fields (`RunMeta`), and every record or block slice a record
is made of (times finite, non-negative and under `MAX_US`, ids and SMs in
range), then each launch as a whole (`check_launch`: block ids unique, a
block's times in order). What needs the graph (every task once, with its
op; SMs the GPU has) is `check_against` once `compare` has built it. A hand
edit or a corrupt file is one line naming the field, never a table of nan.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import numpy as np

from megasim.app.perfetto import trace_events
from megasim.contract.errors import MegasimError
from megasim.io.files import read_json
from megasim.io.writing import write_then_rename
from megasim.contract.mapping.io import LayerDoc
from megasim.contract.modes import MODES
from megasim.contract.problem import INT32_LIMIT, OP_NAMES, VARIANTS, Dimension, Op
from megasim.contract.records import empty_records
from megasim.io.schema import Int64, Items, Str, Text, float_in, int_in, one_of, parse
from megasim.contract.spec import SmCount, SmId

LAUNCH_NAMES = {"fused": "megakernel", "nonfused": "non-fused kernels"}
PROBLEM_KEYS = ("layer", "variant", "partition", "strategy", "params", "mode", "order")
MAX_US = 1e9  # 1000 s: no launch of one layer comes near it, and a table of such times still reads
SLACK_US = 1e-3  # times are written rounded to whole nanoseconds

Micros = float_in(0.0, MAX_US)
BlockId = int_in(0, INT32_LIMIT - 1)
Name = Annotated[str, Str(1)]


@dataclass(kw_only=True)
class Header:
    """The measurement header (`measurement_header`): free-form, but what `compare` reads is typed."""
    __pydantic_config__ = {"extra": "allow"}
    device: Optional[Name] = None
    sm_count: Optional[SmCount] = None


@dataclass(kw_only=True)
class RunMeta:
    """The run a trace is of (`problem_meta`), in a trace's `otherData` or at a raw trace's top level."""
    __pydantic_config__ = {"extra": "allow"}
    header: Header = field(default_factory=Header)
    layer: LayerDoc
    variant: one_of(VARIANTS) = 4
    partition: dict[Text, Dimension]
    strategy: Optional[Name] = None
    params: dict[Text, Any] = field(default_factory=dict)
    mode: Text = MODES[0]
    order: Optional[Annotated[list[Int64], Items(fail_fast=True)]] = None
    launches: Annotated[list[Literal["fused", "nonfused"]], Items(min_length=1, max_length=2)] = \
        field(default_factory=lambda: ["fused"])


@dataclass(kw_only=True)
class RecordRow:
    """One block of a raw trace: the TB_RECORD fields."""
    block: BlockId
    task: BlockId
    op: int_in(0, len(Op) - 1)
    sm: SmId
    dispatch_us: Micros
    start_us: Micros
    ready_us: Micros
    end_us: Micros


@dataclass(kw_only=True)
class RawTrace(RunMeta):
    """A calibration raw trace; each record is a `RecordRow` (`_columns` checks them)."""
    records: Annotated[list[Any], Items(min_length=1)]


@dataclass(kw_only=True)
class EventTrace:
    """A measured trace; each event an object, and each block or spin slice a `BlockSlice` or `SpinSlice`."""
    __pydantic_config__ = {"extra": "allow"}
    traceEvents: list[Any]
    otherData: dict[Text, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class BlockArgs:
    block: BlockId
    task: BlockId
    op: Literal[tuple(OP_NAMES.values())]
    sm: Optional[SmId] = None
    dispatch_us: Optional[Micros] = None


@dataclass(kw_only=True)
class SpinArgs:
    block: BlockId


@dataclass(kw_only=True)
class BlockSlice:
    """A block's slice: it ran from `ts` for `dur` on SM `args.sm` (else its track id)."""
    pid: int_in(0, 1) = 0
    tid: Optional[Int64] = None
    ts: Micros
    dur: Micros
    args: BlockArgs


@dataclass(kw_only=True)
class SpinSlice:
    """A block's spin: from its start, `dur` until its dependencies were met."""
    pid: int_in(0, 1) = 0
    ts: Micros
    dur: Micros
    args: SpinArgs


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


def _first(ids) -> str:
    ids = [int(i) for i in ids]
    return ", ".join(map(str, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _columns(kind, rows: list, origin: str, where) -> dict[str, list]:
    """`rows` (dicts) validated as the dataclass `kind`, one field at a time across all rows: a column of
    floats is one call, where a row is a dozen (a dataclass per row made 125,000 block slices take seconds).
    Keys are field names, "args.block" for nested ones. Where a row is bad, the rows are checked again one
    by one, so the message names the first bad row as `where(i)` gives it."""
    try:
        return _fields(kind, rows, origin)
    except MegasimError:
        for i, row in enumerate(rows):
            parse(kind, row, origin, where(i))
        raise


def _fields(kind, rows: list, origin: str) -> dict[str, list]:
    """`_columns` without the second look: the first bad column's message, its row unnamed."""
    if any(type(row) is not dict for row in rows):
        raise MegasimError(f"{origin}: not every row is an object")
    hints, out = typing.get_type_hints(kind, include_extras=True), {}
    for f in dataclasses.fields(kind):
        values = [row.get(f.name, f.default) for row in rows]  # a missing required field is MISSING: refused
        if dataclasses.is_dataclass(hints[f.name]):
            out.update({f"{f.name}.{k}": v for k, v in _fields(hints[f.name], values, origin).items()})
        else:
            out[f.name] = parse(Annotated[list[hints[f.name]], Items(fail_fast=True)], values, origin)
    return out


def _slices(events: list, names: list, origin: str) -> dict[str, np.ndarray]:
    """{launch: records} from the block and spin slices, each checked; other events are not read."""
    at = {"block": [], "spin": []}
    for i, e in enumerate(events):
        if type(e) is not dict:
            parse(dict[Text, Any], e, origin, ("traceEvents", i))
        elif e.get("ph") == "X" and e.get("cat") in ("block", "spin"):
            at[e["cat"]].append(i)
    blocks, spins = ({k: np.asarray(v) for k, v in _columns(kind, [events[i] for i in at[cat]], origin,
                                                          lambda j, cat=cat: ("traceEvents", at[cat][j])).items()}
                     for kind, cat in ((BlockSlice, "block"), (SpinSlice, "spin")))
    for cat, pids in (("block", blocks["pid"]), ("spin", spins["pid"])):
        outside = np.flatnonzero(pids >= len(names))
        if len(outside):
            raise MegasimError(f"{origin}: traceEvents[{at[cat][outside[0]]}] is in process {pids[outside[0]]}, "
                               f"but otherData.launches names only {', '.join(names)}")
    sm = [parse(SmId, events[i].get("tid"), origin, ("traceEvents", i, "tid")) if s is None else s
          for i, s in zip(at["block"], blocks["args.sm"].tolist())]
    dispatch = [t if d is None else d for t, d in zip(blocks["ts"].tolist(), blocks["args.dispatch_us"].tolist())]
    sm, dispatch = np.asarray(sm, dtype=np.int64), np.asarray(dispatch, dtype=np.float64)
    ops = {name: int(op) for op, name in OP_NAMES.items()}
    launches = {}
    for pid, name in enumerate(names):
        mine = blocks["pid"] == pid
        rec = empty_records(int(mine.sum()))
        for field_, values in (("block", blocks["args.block"]), ("task", blocks["args.task"]), ("sm", sm),
                               ("dispatch_us", dispatch), ("start_us", blocks["ts"]), ("ready_us", blocks["ts"]),
                               ("end_us", blocks["ts"] + blocks["dur"])):
            rec[field_] = values[mine].astype(rec.dtype[field_])
        rec["op"] = [ops[op] for op in blocks["args.op"][mine].tolist()]
        _ready(rec, spins, pid, [i for i, p in zip(at["spin"], spins["pid"].tolist()) if p == pid], origin, name)
        launches[name] = rec
    return launches


def _ready(rec: np.ndarray, spins: dict, pid: int, at: list, origin: str, launch: str) -> None:
    """Each spin slice of process `pid` (traceEvents `at`) sets its block's ready time: the end of the spin."""
    mine = spins["pid"] == pid
    blocks, ready = spins["args.block"][mine].tolist(), (spins["ts"] + spins["dur"])[mine].tolist()
    seen: set = set()
    for i, block in zip(at, blocks):
        if block in seen:
            raise MegasimError(f"{origin}: traceEvents[{i}]: block {block} has a second spin slice")
        seen.add(block)
    index = {b: j for j, b in enumerate(rec["block"].tolist())}
    orphans = [b for b in blocks if b not in index]
    if orphans:
        raise MegasimError(f"{origin}: {launch} launch: spin slices of blocks {_first(orphans)}, "
                           "which have no block slice")
    rec["ready_us"][[index[b] for b in blocks]] = ready


def check_launch(rec: np.ndarray, origin: str, launch: str) -> np.ndarray:
    """`rec` sorted by block, once its block ids are unique and each block's times are in order
    (dispatch, start, ready, end)."""
    rec = rec[np.argsort(rec["block"], kind="stable")]
    dup = np.unique(rec["block"][1:][np.diff(rec["block"]) == 0])
    if len(dup):
        raise MegasimError(f"{origin}: {launch} launch: block ids {_first(dup)} appear more than once")
    for before, after in (("dispatch_us", "start_us"), ("start_us", "ready_us"), ("ready_us", "end_us")):
        bad = np.flatnonzero(rec[before] > rec[after] + SLACK_US)
        if len(bad):
            b = rec[bad[0]]
            raise MegasimError(f"{origin}: {launch} launch: block {b['block']} has {before} {b[before]:g} after "
                               f"{after} {b[after]:g}" + (f" ({len(bad)} blocks in all)" if len(bad) > 1 else ""))
    return rec


def check_against(rec: np.ndarray, graph, num_sms: int, origin: str, launch: str) -> None:
    """Refuse records that are not a run of `graph` on `num_sms` SMs: every task once, with the graph's op,
    block ids 0..n-1, SMs below `num_sms`."""
    n = graph.num_tasks
    if len(rec) != n:
        raise MegasimError(f"{origin}: {len(rec)} {launch} blocks, but the run it names has {n} tasks")
    past = np.flatnonzero(rec["block"] >= n)
    if len(past):
        raise MegasimError(f"{origin}: {launch} launch: block id {rec['block'][past[0]]} is out of range: "
                           f"the run has {n} tasks, so blocks 0..{n - 1}")
    for name, limit, what in (("task", n, "the run has {} tasks"), ("sm", num_sms, "the GPU has {} SMs")):
        bad = np.flatnonzero(rec[name] >= limit)
        if len(bad):
            raise MegasimError(f"{origin}: {launch} launch: block {rec['block'][bad[0]]} has {name} "
                               f"{rec[name][bad[0]]}, out of range: {what.format(limit)}")
    dup = np.flatnonzero(np.bincount(rec["task"], minlength=n) > 1)
    if len(dup):
        raise MegasimError(f"{origin}: {launch} launch: tasks {_first(dup)} ran more than once")
    wrong = np.flatnonzero(graph.op[rec["task"]] != rec["op"])
    if len(wrong):
        r = rec[wrong[0]]
        raise MegasimError(f"{origin}: {launch} launch: block {r['block']} ran task {r['task']} as "
                           f"{OP_NAMES[Op(r['op'])]}, but it is a {OP_NAMES[Op(graph.op[r['task']])]} task")


def read_measured(path) -> tuple[dict, dict[str, np.ndarray]]:
    """(meta, {launch: records}) of a `bench --trace` file or a calibration raw trace, every field checked."""
    origin = str(path)
    doc = read_json(path)
    if isinstance(doc, dict) and "traceEvents" in doc:
        parse(EventTrace, doc, origin)
        meta, prefix = doc.get("otherData", {}), ("otherData",)
    elif isinstance(doc, dict) and "records" in doc:
        meta, prefix = {k: v for k, v in doc.items() if k != "records"}, ()
    else:
        raise MegasimError(f"{origin}: not a measured trace (neither trace events nor a records list)")
    missing = [k for k in ("layer", "partition") if k not in meta]
    if missing:
        raise MegasimError(f"{origin}: the trace does not say which run it is (no {', '.join(missing)}); "
                           "traces from `megasim bench --trace` do")
    if prefix:
        names = parse(RunMeta, meta, origin, prefix).launches
        if len(set(names)) != len(names):
            raise MegasimError(f"{origin}: otherData.launches names {names[0]} twice")
        launches = _slices(doc["traceEvents"], names, origin)
    else:
        parse(RawTrace, doc, origin)
        columns = _columns(RecordRow, doc["records"], origin, lambda i: ("records", i))
        rec = empty_records(len(doc["records"]))
        for name in rec.dtype.names:
            rec[name] = columns[name]
        launches = {"fused": rec}
    return meta, {name: check_launch(rec, origin, name) for name, rec in launches.items()}


__all__ = ["LAUNCH_NAMES", "PROBLEM_KEYS", "problem_meta", "write_measured_trace", "read_measured",
           "check_against"]
