"""`megasim.io.accept` takes a subset of what pydantic takes, and builds what pydantic builds.

It checks plainly valid files without importing pydantic (docs/results/engine_speed/startup.py), so it must never let
through a value pydantic refuses, nor return a different value (an int where pydantic gives a float,
a list where it gives a tuple). Checked on every committed file, which it must take (or the default
`megasim simulate` imports pydantic again), and on generated values for every file shape and field type.
"""
import json
import math
import sys
import typing
from dataclasses import fields, is_dataclass

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import megasim.io.schema as schema
from megasim.app.calibrate.measurements import Run, RunsFile, load_runs
from megasim.app.calibrate.profile import _ProfileDoc, load_profile, profile_path
from megasim.app.catalog import SCENARIOS, gpu_names, load_gpu
from megasim.app.measured_trace import BlockSlice, RawTrace, RunMeta, SpinSlice, read_measured
from megasim.io.accept import LONGEST, REFUSED, accept
from megasim.contract.errors import MegasimError
from megasim.io.files import read_json, read_toml
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import MappingFile, describe, read_mapping_file
from megasim.contract.problem import Layer
from megasim.contract.spec import GPUSpec

MANY = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])
SPEC = read_toml(SCENARIOS / "gpus" / "h200.toml")
PROFILE = read_toml(SCENARIOS / "calibrations" / "h200.toml")
RUNS = read_json(SCENARIOS / "calibrations" / "raw" / "h200_runs.json")
GRAPH = build_graph(Layer(2, 32, 20, 20, 32))
MAPPING = {"schema": 1, **describe(GRAPH), "mode": "static", "strategy": "paper", "params": {},
           "order": make(GRAPH, "paper").order.tolist()}
FIELD_TYPES = typing.get_type_hints(GPUSpec, include_extras=True)
RAW_TRACE = read_json(SCENARIOS / "calibrations" / "raw" / "h200_trace_resnet2.json")
SHORT_TRACE = {**RAW_TRACE, "records": RAW_TRACE["records"][:3]}
BLOCK_SLICE = {"ph": "X", "pid": 0, "tid": 94000, "name": "gemm", "cat": "block", "ts": 1.5, "dur": 12.25,
               "args": {"block": 7, "task": 40, "op": "gemm", "sm": 94, "dispatch_us": 1.5}}
SPIN_SLICE = {"ph": "X", "pid": 0, "tid": 94000, "name": "spin", "cat": "spin", "ts": 1.5, "dur": 1,
              "args": {"block": 7, "task": 40, "op": "gemm"}}

# values on either side of the ranges, types and shapes the declarations draw lines between
EDGES = st.one_of(st.sampled_from([
    None, True, False, 0, 1, -1, 2, 3, 4, 6, 131, 132, 4095, 4096, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63,
    -2**63, -2**63 - 1, 10**400, 0.0, -0.0, 1e-4, 9.9e-5, 0.5, 1.0, 1.0000001, 1e6, 1.0000001e6, 1e8, 1e9, 1e308,
    math.inf, -math.inf, math.nan, "", "x", "4", "1.0", "gemm", "conv", "train", "static", [], [1], [1.0] * 4,
    [1, 2.0, 3, 4], (1, 2), {}, {"gemm": 0.5}, {"gemm": 1}, {"gemm": 2.0}, {"x": "y"}, {1: 1}]),
    st.integers(), st.floats(), st.text(max_size=3))


def paths(doc, depth: int = 3) -> list[tuple]:
    """Key paths into `doc`, through dicts and the first two items of lists."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc[:2]) if isinstance(doc, list) else ()
    out = []
    for key, value in items:
        out.append((key,))
        if depth > 1:
            out += [(key,) + p for p in paths(value, depth - 1)]
    return out


@st.composite
def edited(draw, base: dict):
    """`base` with one to three values replaced by edge values, or keys dropped."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        *parents, leaf = draw(st.sampled_from(paths(doc)))
        holder = doc
        for key in parents:
            holder = holder[key]
        if isinstance(holder, dict) and draw(st.booleans()):
            del holder[leaf]
        else:
            holder[leaf] = draw(EDGES)
    return doc


def same(a, b) -> bool:
    """Equal, and of the same types all the way down (1 == 1.0 and [1] == (1,) do not count)."""
    if type(a) is not type(b):
        return False
    if is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def agrees(kind, value) -> bool:
    """accept(kind, value) is REFUSED, or pydantic takes `value` too and builds the same thing; True if taken."""
    got = accept(kind, value)
    if got is REFUSED:
        return False
    assert same(got, schema.adapter(kind).validate_python(value)), (kind, value, got)
    return True


def test_every_committed_file_is_taken_without_pydantic(monkeypatch):
    """Every check made while loading the committed specs, profiles, runs and a saved mapping is accept's."""
    calls = []

    def recorded(kind, data):
        calls.append((kind, data, accept(kind, data)))
        return calls[-1][2]
    monkeypatch.setattr(schema, "accept", recorded)
    for name in gpu_names():
        load_gpu(name)
        if profile_path(name).exists():
            load_profile(profile_path(name))
    for runs in (SCENARIOS / "calibrations" / "raw").glob("*_runs.json"):
        load_runs(runs)
    for trace in (SCENARIOS / "calibrations" / "raw").glob("*_trace_resnet*.json"):
        read_measured(trace)
    assert {kind for kind, _, _ in calls} >= {GPUSpec, _ProfileDoc, RunsFile, RawTrace}
    for kind, data, got in calls:
        assert got is not REFUSED, (kind, data)
        assert same(got, schema.adapter(kind).validate_python(data)), kind


def test_a_mapping_file_is_taken_and_a_long_one_goes_to_pydantic(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(MAPPING))
    assert agrees(MappingFile, MAPPING)
    long = {**MAPPING, "order": list(range(LONGEST + 1))}
    assert accept(MappingFile, long) is REFUSED
    path.write_text(json.dumps(long))
    assert read_mapping_file(path)["order"] == long["order"]  # pydantic took it


def test_without_pydantic_good_files_load_and_a_bad_one_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydantic", None)  # import pydantic now raises ImportError
    assert load_gpu("h200").sm_count == 132
    with pytest.raises(MegasimError, match=r"^g.toml: checking this file needs pydantic"):
        schema.parse(GPUSpec, {**SPEC["hardware"], "name": "h200", "sm_count": "132"}, "g.toml")


@MANY
@given(name=st.sampled_from(sorted(FIELD_TYPES)), value=EDGES)
def test_field_values(name, value):
    event("taken" if agrees(FIELD_TYPES[name], value) else "refused")


@pytest.mark.parametrize("kind, base", [(GPUSpec, {"name": "h200", **SPEC["hardware"], **SPEC["model"]}),
                                        (_ProfileDoc, PROFILE), (MappingFile, MAPPING), (RunsFile, RUNS),
                                        (Run, RUNS["runs"][0]), (RawTrace, SHORT_TRACE),
                                        (RunMeta, {k: v for k, v in RAW_TRACE.items() if k != "records"}),
                                        (BlockSlice, BLOCK_SLICE), (SpinSlice, SPIN_SLICE)],
                         ids=lambda x: getattr(x, "__name__", ""))
def test_edited_documents(kind, base):
    """The committed documents with values replaced or keys dropped, up to three levels down."""
    assert agrees(kind, base)

    @MANY
    @given(doc=edited(base))
    def check(doc):
        event("taken" if agrees(kind, doc) else "refused")
    check()
