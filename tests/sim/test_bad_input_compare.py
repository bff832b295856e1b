"""`megasim compare`'s input, bad in each way an audit found or a hand edit makes: one line on stderr, exit code 2,
no traceback, nothing left behind; and the good traces the cases are one edit from still compare.

One case is one line of `CASES`: an id, the command (`{tmp}` is the test's folder), the files to write there
first, and a phrase the message must hold. The files are edits of two good traces: `t.json`, in the format
`bench --trace` writes (a block per task of a small layer, both launches), and `r.json`, the calibration's raw
trace of ResNet-2 on the H200. Every command names `--plot {tmp}/out/o.png`, so nothing may appear under
{tmp}/out. The CLI runs in-process; an alarm turns a hang into a failure.
"""
import json

import numpy as np
import pytest

from ..conftest import CALIBRATION_RAW
from .conftest import assert_refused, write_files
from megasim.app.cli import main
from megasim.app.measured_trace import problem_meta, read_measured, write_measured_trace
from megasim.app.perfetto import trace_events
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.io.accept import LONGEST
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer, Op, Partition
from megasim.contract.records import empty_records

GRAPH = build_graph(Layer(2, 32, 20, 20, 32))
MAPPING = make(GRAPH, "paper")
N = GRAPH.num_tasks
RAW = json.loads((CALIBRATION_RAW / "h200_trace_resnet2.json").read_text())


def _records(graph=GRAPH, order=MAPPING.order) -> np.ndarray:
    """A block per task in mapping order, on 7 SMs; every GEMM spins a little first."""
    n = graph.num_tasks
    rec = empty_records(n)
    rec["block"], rec["task"] = np.arange(n), order
    rec["op"], rec["sm"] = graph.op[order], np.arange(n) % 7
    rec["dispatch_us"] = rec["start_us"] = np.arange(n) * 0.5
    rec["ready_us"] = rec["start_us"] + np.where(rec["op"] == Op.GEMM, 0.25, 0.0)
    rec["end_us"] = rec["ready_us"] + 2.0
    return rec


def _events() -> list[dict]:
    events = []
    for pid in (0, 1):
        for e in trace_events(_records(), {"name": "measured"})["traceEvents"]:
            events.append({**e, "pid": pid})
    return events


EVENTS = _events()
META = {"header": {"device": "NVIDIA H200", "sm_count": 132}, **problem_meta(GRAPH, MAPPING, "static"),
        "source": "measured", "launches": ["fused", "nonfused"]}
BLOCK = [i for i, e in enumerate(EVENTS) if e.get("cat") == "block"]
SPIN = [i for i, e in enumerate(EVENTS) if e.get("cat") == "spin"]
B, S = BLOCK[0], SPIN[0]  # the first block slice, the first spin slice
FILTER = next(k for k, i in enumerate(BLOCK) if EVENTS[i]["args"]["op"] == "filter_transform")


def trace(doc: dict | None = None, **meta) -> dict:
    """{"t.json": the good trace with `meta` set in its otherData (a None value drops the key)}, or `doc`."""
    if doc is None:
        other = {k: v for k, v in {**META, **meta}.items() if v is not None}
        doc = {"traceEvents": EVENTS, "displayTimeUnit": "ns", "otherData": other}
    return {"t.json": json.dumps(doc)}


def event(i: int, drop: tuple = (), meta: dict | None = None, **fields) -> dict:
    """The good trace with traceEvents[i] changed: `fields` set (args_x sets args.x), `drop` keys removed;
    and `meta` set in its otherData."""
    e = json.loads(json.dumps(EVENTS[i]))
    for key, value in fields.items():
        (e["args"] if key.startswith("args_") else e)[key.removeprefix("args_")] = value
    for key in drop:
        (e["args"] if key.startswith("args_") else e).pop(key.removeprefix("args_"))
    return trace({"traceEvents": EVENTS[:i] + [e] + EVENTS[i + 1:], "otherData": {**META, **(meta or {})}})


def raw(**top) -> dict:
    """{"r.json": the ResNet-2 raw trace with `top` set (a None value drops the key)}."""
    return {"r.json": json.dumps({k: v for k, v in {**RAW, **top}.items() if v is not None})}


def record(k: int, **fields) -> dict:
    """The raw trace with records[k]'s `fields` set (a None value drops the field)."""
    rows = list(RAW["records"])
    rows[k] = {f: v for f, v in {**rows[k], **fields}.items() if v is not None}
    return raw(records=rows)


T = "compare {tmp}/t.json --plot {tmp}/out/o.png"
R = "compare {tmp}/r.json --plot {tmp}/out/o.png"
NAN, INF = float("nan"), float("inf")
ORDER = MAPPING.order.tolist()
SPIN_BLOCK = EVENTS[S]["args"]["block"]

CASES = [
    # the audit: metadata that gave tracebacks
    ("variant-str", T, trace(variant="abc"), "otherData.variant"),
    ("header-str", T, trace(header="x"), "otherData.header"),
    ("params-list", T, trace(params=[1, 2]), "otherData.params should be a valid dictionary"),
    ("order-2**70", T, trace(order=[2**70] + ORDER[1:]), "otherData.order[0]"),
    ("trace-events-str", T, trace({"traceEvents": "abc", "otherData": META}), "traceEvents should be a valid list"),
    ("plot-txt", "compare {tmp}/none.json --plot {tmp}/out/o.txt", {}, "use .png, .pdf or .svg"),
    ("raw-records-str", R, raw(records="x"), "records should be a valid list"),
    # the audit: garbage that compared with exit 0
    ("ts-nan", T, event(B, ts=NAN), f"traceEvents[{B}].ts should be a finite number"),
    ("ts-negative", T, event(B, ts=-1.0), f"traceEvents[{B}].ts should be greater than or equal to 0"),
    ("ts-inf", T, event(B, ts=INF), f"traceEvents[{B}].ts"),
    ("ts-1e300", T, event(B, ts=1e300), f"traceEvents[{B}].ts should be less than or equal to"),
    ("dur-nan", T, event(B, dur=NAN), f"traceEvents[{B}].dur"),
    ("dur-negative", T, event(B, dur=-2.0), f"traceEvents[{B}].dur"),
    ("op-99", T, event(B, args_op="op99"), f"traceEvents[{B}].args.op"),
    ("sm-1e6", T, event(B, args_sm=10**6), f"traceEvents[{B}].args.sm"),
    ("sm-past-the-gpu", T, event(B, args_sm=132), "has sm 132, out of range: the GPU has 132 SMs"),
    ("block-duplicate", T, event(BLOCK[1], args_block=0), "fused launch: block ids 0 appear more than once"),
    ("variant-4.7", T, trace(variant=4.7), "otherData.variant"),
    ("raw-time-nan", R, record(0, end_us=NAN), "records[0].end_us should be a finite number"),
    ("raw-time-negative", R, record(0, start_us=-5.0), "records[0].start_us"),
    ("raw-time-inf", R, record(0, ready_us=INF), "records[0].ready_us"),
    ("raw-time-1e300", R, record(0, end_us=1e300), "records[0].end_us"),
    ("raw-op-99", R, record(0, op=99), "records[0].op"),
    ("raw-sm-1e6", R, record(0, sm=10**6), "records[0].sm"),
    ("raw-sm-past-the-gpu", R, record(0, sm=200), "out of range: the GPU has 132 SMs"),
    ("raw-block-duplicate", R, record(1, block=0), "block ids 0 appear more than once"),
    ("raw-variant-4.7", R, raw(variant=4.7), "variant"),
    # the run the trace names
    ("variant-float-4.0", T, trace(variant=4.0), "otherData.variant"),
    ("variant-3", T, trace(variant=3), "must be one of 2, 4, 6"),
    ("variant-bool", T, trace(variant=True), "otherData.variant"),
    ("variant-other", T, trace(variant=2), "fused blocks, but the run it names has"),
    ("no-layer", T, trace(layer=None), "does not say which run it is (no layer)"),
    ("no-partition", R, raw(partition=None), "does not say which run it is (no partition)"),
    ("layer-str", T, trace(layer="x"), "otherData.layer"),
    ("layer-negative", T, trace(layer={**META["layer"], "n": -1}), "otherData.layer.n"),
    ("layer-extra", T, trace(layer={**META["layer"], "z": 1}), "otherData.layer.z is not a known field"),
    ("layer-huge", T, trace(layer={**META["layer"], "h": 10**7, "w": 10**7}), "fused blocks, but the run it names"),
    ("partition-list", T, trace(partition=[1]), "otherData.partition"),
    ("partition-zero", T, trace(partition={**META["partition"], "threads": 0}), "otherData.partition.threads"),
    ("partition-threads-100", T, trace(partition={**META["partition"], "threads": 100}), "multiple of 32"),
    ("partition-unknown", T, trace(partition={**META["partition"], "tiles": 4}), "unknown field(s) ['tiles']"),
    ("mode-int", T, trace(mode=3), "otherData.mode"),
    ("mode-unknown", T, trace(mode="fast"), "fast"),
    ("header-list", R, raw(header=[1]), "header"),
    ("header-no-device", T, trace(header={"sm_count": 132}), "the header names no device; give --gpu"),
    ("header-device-int", T, trace(header={"device": 5}), "otherData.header.device"),
    ("header-device-empty", T, trace(header={"device": ""}), "otherData.header.device"),
    ("header-device-unknown", T, trace(header={"device": "NVIDIA Q9000"}),
     "device 'NVIDIA Q9000' is none of the GPUs megasim knows"),
    ("header-sm-count-0", T, trace(header={"device": "NVIDIA H200", "sm_count": 0}), "otherData.header.sm_count"),
    ("header-sm-count-str", T, trace(header={"device": "NVIDIA H200", "sm_count": "132"}), "header.sm_count"),
    ("header-sm-count-big", T, event(B, args_sm=3000, meta={"header": {"device": "NVIDIA H200", "sm_count": 4000}}),
     "has sm 3000, out of range: the GPU has 132 SMs"),
    ("header-sm-count-small", T, trace(header={"device": "NVIDIA H200", "sm_count": 4}), "the GPU has 4 SMs"),
    ("launches-str", T, trace(launches="fused"), "otherData.launches"),
    ("launches-unknown", T, trace(launches=["fused", "x"]), "otherData.launches[1]"),
    ("launches-twice", T, trace(launches=["fused", "fused"]), "names fused twice"),
    ("launches-empty", T, trace(launches=[]), "otherData.launches has 0 items"),
    ("launches-three", T, trace(launches=["fused", "nonfused", "fused"]), "otherData.launches has 3 items"),
    ("other-data-str", T, trace({"traceEvents": EVENTS, "otherData": "x"}), "otherData should be a valid dict"),
    # the mapping it names
    ("order-float", T, trace(order=[t + 0.5 for t in ORDER]), "otherData.order[0]"),
    ("order-float-ints", T, trace(order=[float(t) for t in ORDER]), "otherData.order[0]"),
    ("order-str", T, trace(order=[str(t) for t in ORDER]), "otherData.order[0]"),
    ("order-bools", T, trace(order=[True] * N), "otherData.order[0]"),
    ("order-nan", T, trace(order=[NAN] + ORDER[1:]), "otherData.order[0]"),
    ("order-not-list", T, trace(order="x"), "otherData.order"),
    ("order-negative", T, trace(order=[-1] + ORDER[1:]), "name task ids outside [0, 30)"),
    ("order-past-n", T, trace(order=ORDER[:-1] + [N]), "name task ids outside [0, 30)"),
    ("order-duplicate", T, trace(order=[ORDER[0]] + ORDER[:-1]), "appear more than once"),
    ("order-short", T, trace(order=ORDER[:-1]), "tasks missing"),
    ("order-reversed", T, trace(order=ORDER[::-1]), "comes before its parent"),
    ("strategy-unknown", T, trace(order=None, strategy="best"), "unknown mapping strategy"),
    ("strategy-int", T, trace(strategy=5), "otherData.strategy"),
    ("no-mapping", T, trace(order=None, strategy=None), "names no mapping (strategy or order)"),
    ("params-unknown", T, trace(order=None, params={"zzz": 1}), "unknown option(s) zzz"),
    ("params-bad-value", T, trace(order=None, params={"dig": -4}), "paper mapping"),
    ("params-bad-value-with-order", T, trace(params={"dig": "x"}), "option dig wants int, got 'x'"),
    # the events
    ("cat-list", T, event(B, cat=["block"]), "29 fused blocks, but the run it names has 30 tasks"),
    ("events-items-int", T, trace({"traceEvents": [1, 2], "otherData": META}), "traceEvents[0] should be a valid dict"),
    ("events-empty", T, trace({"traceEvents": [], "otherData": META}), "0 fused blocks, but the run it names has 30"),
    ("block-missing", T, trace({"traceEvents": EVENTS[:B] + EVENTS[B + 1:], "otherData": META}), "29 fused blocks"),
    ("ts-str", T, event(B, ts="0"), f"traceEvents[{B}].ts"),
    ("ts-bool", T, event(B, ts=True), f"traceEvents[{B}].ts"),
    ("ts-missing", T, event(B, drop=("ts",)), f"traceEvents[{B}].ts is missing"),
    ("args-missing", T, event(B, drop=("args",)), f"traceEvents[{B}].args is missing"),
    ("args-str", T, event(B, args="x"), f"traceEvents[{B}].args"),
    ("op-int", T, event(B, args_op=2), f"traceEvents[{B}].args.op"),
    ("op-wrong", T, event(BLOCK[FILTER], args_op="gemm"), "as gemm, but it is a filter_transform task"),
    ("sm-negative", T, event(B, args_sm=-1), f"traceEvents[{B}].args.sm"),
    ("sm-str", T, event(B, args_sm="0"), f"traceEvents[{B}].args.sm"),
    ("sm-from-huge-tid", T, event(B, drop=("args_sm",), tid=10**12), f"traceEvents[{B}].tid"),
    ("block-negative", T, event(B, args_block=-1), f"traceEvents[{B}].args.block"),
    ("block-float", T, event(B, args_block=0.5), f"traceEvents[{B}].args.block"),
    ("block-missing-id", T, event(B, drop=("args_block",)), f"traceEvents[{B}].args.block is missing"),
    ("block-past-n", T, event(B, args_block=N), "block id 30 is out of range: the run has 30 tasks"),
    ("task-duplicate", T, event(BLOCK[1], args_task=ORDER[0]), "ran more than once"),
    ("task-past-n", T, event(B, args_task=N), "has task 30, out of range"),
    ("nonfused-task-past-n", T, event(BLOCK[N], args_task=N), "nonfused launch: block 0 has task 30, out of range"),
    ("task-2**40", T, event(B, args_task=2**40), f"traceEvents[{B}].args.task"),
    ("dispatch-nan", T, event(B, args_dispatch_us=NAN), f"traceEvents[{B}].args.dispatch_us"),
    ("dispatch-after-start", T, event(BLOCK[1], args_dispatch_us=100.0), "dispatch_us 100 after start_us"),
    ("pid-5", T, event(B, pid=5), f"traceEvents[{B}].pid"),
    ("pid-str", T, event(B, pid="0"), f"traceEvents[{B}].pid"),
    ("pid-unnamed", T, trace(launches=["fused"]), "names only fused"),
    ("spin-past-end", T, event(S, dur=100.0), "ready_us"),
    ("spin-nan", T, event(S, ts=NAN), f"traceEvents[{S}].ts"),
    ("spin-orphan", T, event(S, args_block=999), "spin slices of blocks 999, which have no block slice"),
    ("spin-twice", T, trace({"traceEvents": EVENTS + [EVENTS[S]], "otherData": META}),
     f"block {SPIN_BLOCK} has a second spin slice"),
    ("launch-absent", T.replace("compare", "compare --launch nonfused"), trace(
        {"traceEvents": [e for e in EVENTS if e["pid"] == 0], "otherData": {**META, "launches": ["fused"]}}),
     "no nonfused launch in the trace; it has fused"),
    # the raw trace's records
    ("raw-records-empty", R, raw(records=[]), "records has 0 items"),
    ("raw-records-item-str", R, raw(records=["x"]), "records[0]"),
    ("raw-field-missing", R, record(0, end_us=None), "records[0].end_us is missing"),
    ("raw-time-str", R, record(0, end_us="1"), "records[0].end_us"),
    ("raw-op-str", R, record(0, op="gemm"), "records[0].op"),
    ("raw-sm-negative", R, record(0, sm=-1), "records[0].sm"),
    ("raw-start-after-end", R, record(0, start_us=50.0), "has start_us 50 after ready_us"),
    ("raw-task-duplicate", R, record(1, task=RAW["records"][0]["task"]), "ran more than once"),
    ("raw-op-wrong", R, record(0, op=2), "but it is a filter_transform task"),
    ("raw-order-2**70", R, raw(order=[2**70]), "order[0]"),
    ("raw-params-list", R, raw(params=[1, 2]), "params should be a valid dictionary"),
    # the file itself
    ("empty-file", T, {"t.json": ""}, "malformed JSON"),
    ("top-list", T, {"t.json": "[]"}, "not a measured trace"),
    ("top-str", T, {"t.json": '"x"'}, "not a measured trace"),
    ("top-null", T, {"t.json": "null"}, "not a measured trace"),
    ("not-utf8", T, {"t.json": b'{"traceEvents": ["\xff"]}'}, "not UTF-8"),
    ("deep", T, {"t.json": "[" * 100_000}, "malformed JSON"),
    ("int-5000-digits", T, {"t.json": '{"traceEvents": [' + "9" * 5000 + "]}"}, "malformed JSON"),
    ("missing-file", "compare {tmp}/none.json --plot {tmp}/out/o.png", {}, "cannot read"),
    # the arguments
    ("plot-pngx", T + "x", trace(), "use .png, .pdf or .svg"),
    ("plot-under-a-file", "compare {tmp}/t.json --plot {tmp}/t.json/o.png", trace(), "is a file, not a folder"),
    ("gpu-unknown", T + " --gpu nosuch", trace(), "unknown GPU 'nosuch'"),
    ("policy-unknown", T + " --policy nosuch", trace(), "unknown dispatch policy 'nosuch'"),
]


@pytest.mark.parametrize("argv, files, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, alarm, argv, files, phrase):
    write_files(tmp_path, files)
    rc = main(argv.format(tmp=tmp_path).split())
    out, err = capsys.readouterr()
    assert_refused(rc, err, phrase)
    assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)


@pytest.mark.parametrize("argv, files", [
    (T, trace()),
    (T.replace("compare", "compare --launch nonfused"), trace()),
    (T, trace(order=None)),
    (T, trace(header={"device": "NVIDIA H200"})),
    (T, event(B, drop=("args_sm", "args_dispatch_us"), tid=3)),
    (T + " --gpu a100", trace()),
    (R, raw()),
], ids=["trace", "trace-nonfused", "trace-by-strategy", "trace-no-sm-count", "trace-sm-from-tid", "trace-on-a100",
        "raw"])
def test_the_good_traces_the_cases_start_from_compare(tmp_path, capsys, alarm, argv, files):
    """The bad cases are one edit away from these, so each fails for its edit, not for something else."""
    write_files(tmp_path, files)
    rc = main(argv.format(tmp=tmp_path).split())
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "whole run" in out and "nan" not in out and (tmp_path / "out" / "o.png").stat().st_size > 10_000


def test_a_long_trace_is_checked_a_column_at_a_time_and_a_bad_slice_still_named(tmp_path):
    """Past `LONGEST` slices each column goes to pydantic in one call; a bad slice near the end is named by its
    index in traceEvents all the same."""
    graph = build_graph(Layer(16, 64, 56, 56, 64), partition=Partition(
        tiles_per_group=4, input_channels_per_task=8, gemm_mats_per_task=9, output_channels_per_task=8))
    mapping = make(graph, "paper")
    assert graph.num_tasks > LONGEST
    rec = _records(graph, mapping.order)
    path = write_measured_trace(tmp_path / "t.json", {"fused": rec}, problem_meta(graph, mapping, "static"))
    back = read_measured(path)[1]["fused"]
    assert (back["task"] == rec["task"]).all() and np.allclose(back["ready_us"], rec["ready_us"], atol=1e-3)
    doc = json.loads(path.read_text())
    last = max(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "block")
    doc["traceEvents"][last]["dur"] = -1.0
    path.write_text(json.dumps(doc))
    with pytest.raises(MegasimError, match=rf"traceEvents\[{last}\]\.dur should be greater than or equal to 0"):
        read_measured(path)
