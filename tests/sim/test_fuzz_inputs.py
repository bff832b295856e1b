"""Fuzzing the edges: generated files never give a traceback or a hang, and no illegal mapping passes.

1. Hypothesis writes mapping files, GPU spec TOML and calibration profiles: random bytes, random JSON or
   TOML, and the committed good files with keys dropped, added or given values of the wrong type or
   range. Each goes through the real CLI, in-process: the outcome must be exit 0 with JSON on stdout, or
   exit 2 with one line `megasim: error: ...`. Anything else (a traceback is an exception escaping
   `main`) fails, and an alarm turns a hang into a failure.
2. Ten thousand and more generated illegal mappings (duplicate, missing and out-of-range task ids,
   children moved before a parent, legal orders of another graph) go to `validate(graph, mapping)`;
   none may be accepted. Whether a mapping is illegal is decided by an independent oracle that runs the
   megakernel's counters, and legal orders are checked to pass, so the count means something. The
   figure is printed (`pytest -s`), recorded as a property, and quoted in docs/architecture.md.
"""
import contextlib
import io
import json
import math
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from megasim.app.catalog import SCENARIOS
from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.io.files import tomllib
from megasim.contract.graph import NO_COUNTER, build_graph
from megasim.contract.mapping import Mapping, make, validate
from megasim.contract.mapping.io import describe
from megasim.contract.problem import Layer, Partition, WinogradVariant

from .conftest import alarm_after

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SMALL = ["--shape", "2,32,20,20,32", "--json"]
GRAPH = build_graph(Layer(2, 32, 20, 20, 32))
MAPPING = {"schema": 1, **describe(GRAPH), "mode": "static", "strategy": "paper", "params": {},
           "order": make(GRAPH, "paper").order.tolist()}
SPEC = tomllib.loads((SCENARIOS / "gpus" / "h200.toml").read_text())
PROFILE = tomllib.loads((SCENARIOS / "calibrations" / "h200.toml").read_text())


def run_cli(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with alarm_after(20), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def assert_clean(rc: int, out: str, err: str) -> None:
    """Exit 0 with one JSON document, or exit 2 with exactly one error line."""
    event(f"exit {rc}")
    if rc == 0:
        json.loads(out)
    else:
        assert rc == 2, (rc, err)
        assert err.startswith("megasim: error: ") and err.count("\n") == 1, err


# ---- generated values and documents ------------------------------------------------------------

plausible = st.one_of(st.integers(0, 10**9), st.floats(1e-6, 1e9))   # often in range: the run goes ahead
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2**31, 2**63, 10**30, -(2**63) - 1]),
                    st.floats(), st.sampled_from([0.0, -0.0, 1e-300, 1e300, 0.5, 4.0]), st.text(max_size=4),
                    plausible, plausible)
wild = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                    max_leaves=6)
json_docs = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
                         lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                 st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                         max_leaves=12)


def paths_of(doc: dict, depth: int = 2) -> list[tuple]:
    """Every key path down to `depth` (lists count as leaves)."""
    out = []
    for key, value in doc.items():
        out.append((key,))
        if depth > 1 and isinstance(value, dict):
            out += [(key,) + p for p in paths_of(value, depth - 1)]
    return out


@st.composite
def mutated(draw, base: dict, depth: int = 2):
    """`base` with up to three edits: a value replaced by a wild one, a key dropped, or one added."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(paths_of(doc, depth) or [("x",)]))
        *parents, leaf = path
        holder = doc
        for key in parents:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            continue
        edit = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
        if edit == "replace":
            holder[leaf] = draw(wild)
        elif edit == "drop":
            holder.pop(leaf, None)
        else:
            holder[draw(st.text(min_size=1, max_size=5))] = draw(wild)
    return doc


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    return '""'


def toml_text(doc: dict) -> str:
    """A TOML rendering: top-level tables as [sections], anything else as a key."""
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict) and v is not None]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{json.dumps(name)}]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"


def file_contents(base: dict, render):
    """Random bytes, a random document, or the good file with a few bad edits."""
    return st.one_of(st.binary(max_size=300),
                     json_docs.map(lambda d: render(d if isinstance(d, dict) else {"x": d})),
                     mutated(base).map(render), mutated(base).map(render))


def write(folder: Path, name: str, content) -> Path:
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return path


# ---- 1. files through the CLI ---------------------------------------------------------------------

@FUZZ
@given(content=file_contents(MAPPING, json.dumps))
def test_fuzzed_mapping_files(tmp_path_factory, content):
    path = write(tmp_path_factory.mktemp("map"), "m.json", content)
    assert_clean(*run_cli(["simulate", "--mapping", str(path), "--json"]))


@FUZZ
@given(content=file_contents(SPEC, toml_text))
def test_fuzzed_gpu_specs(tmp_path_factory, content):
    path = write(tmp_path_factory.mktemp("gpu"), "fuzzed.toml", content)
    assert_clean(*run_cli(["simulate", "--gpu", str(path), *SMALL]))


@FUZZ
@given(content=file_contents(PROFILE, toml_text))
def test_fuzzed_calibration_profiles(tmp_path_factory, content):
    """`simulate --gpu h200` reads the profile (and its intervals) from where `profile_path` points."""
    path = write(tmp_path_factory.mktemp("profile"), "h200.toml", content)
    with mock.patch("megasim.app.calibrate.profile.profile_path", lambda gpu: path):
        assert_clean(*run_cli(["simulate", "--gpu", "h200", *SMALL]))


# ---- 2. illegal mappings against validate() --------------------------------------------------------

GRAPHS = [build_graph(Layer(*shape), WinogradVariant(m), Partition(**part)) for shape, m, part in [
    ((2, 32, 20, 20, 32), 4, {}),
    ((1, 64, 12, 12, 64), 2, {"tiles_per_group": 16, "input_channels_per_task": 16}),
    ((2, 16, 9, 9, 48), 6, {"tiles_per_group": 8, "gemm_mats_per_task": 1, "gemm_k_per_task": 32}),
    ((1, 32, 16, 16, 32), 2, {"tiles_per_group": 8, "input_channels_per_task": 8, "gemm_mats_per_task": 2}),
    ((2, 32, 8, 8, 64), 4, {"tiles_per_group": 8, "gemm_mats_per_task": 1}),
    ((1, 48, 10, 10, 32), 4, {"tiles_per_group": 16, "input_channels_per_task": 8, "gemm_mats_per_task": 1}),
    # twins: as many tasks as the first, second and last graphs above, other dependencies
    ((2, 32, 8, 8, 64), 2, {"tiles_per_group": 16, "input_channels_per_task": 32, "gemm_mats_per_task": 4}),
    ((1, 32, 16, 16, 32), 4, {"tiles_per_group": 16, "input_channels_per_task": 32, "gemm_mats_per_task": 1}),
    ((2, 32, 8, 8, 64), 6, {"tiles_per_group": 16, "input_channels_per_task": 32, "gemm_mats_per_task": 2}),
]]


def legal_by_counters(graph, order) -> bool:
    """The oracle: run the order as the megakernel would, each block waiting only on counters already at zero."""
    order = np.asarray(order)
    n = graph.num_tasks
    if order.ndim != 1 or len(order) != n or order.min() < 0 or order.max() >= n or len(set(order.tolist())) != n:
        return False
    remaining = graph.counter_init.astype(np.int64).copy()
    waits, signals = graph.waits_on.tolist(), graph.signals.tolist()
    for t in order.tolist():
        if any(c != NO_COUNTER and remaining[c] for c in waits[t]):
            return False
        if signals[t] != NO_COUNTER:
            remaining[signals[t]] -= 1
    return True


def legal_orders(graph, rng, count: int) -> list[np.ndarray]:
    orders = [make(graph, "sequential").order, make(graph, "interleave").order]
    orders += [make(graph, "paper", dig=int(rng.integers(0, 64)), dgo=int(rng.integers(0, 64)),
                    m=int(rng.integers(1, 5))).order for _ in range(count // 4)]
    orders += [make(graph, "random_topo", seed=int(s)).order for s in rng.integers(0, 2**31, count - len(orders))]
    return orders


def child_before_parent(graph, order, rng):
    """Move a task that waits on a counter to a random block before the last of its parents."""
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    t = int(rng.choice(np.flatnonzero((graph.waits_on != NO_COUNTER).any(axis=1))))
    parents = np.concatenate([graph.parents_of_counter(c) for c in graph.waits_on[t] if c != NO_COUNTER])
    last = int(pos[parents].max())
    rest = order[order != t]
    return np.insert(rest, int(rng.integers(0, last + 1)), t)   # `last` is unchanged in `rest`: t came after it


def illegal_mappings(graph, legal: list, other: list, twin: list, rng):
    """(kind, order) pairs, one of each kind per legal order; `twin`: legal orders of same-size graphs."""
    n = graph.num_tasks
    for order in legal:
        i, j = rng.choice(n, 2, replace=False)
        dup = order.copy()
        dup[i] = order[j]
        yield "duplicate", dup
        yield "missing", np.delete(order, rng.choice(n, int(rng.integers(1, max(2, n // 4))), replace=False))
        out = order.copy()
        out[i] = rng.choice([-1, n, n + int(rng.integers(1, 1000)), -(2**62), 2**62])
        yield "out-of-range", out
        yield "child-before-parent", child_before_parent(graph, order, rng)
        if twin and rng.random() < 0.5:
            yield "wrong-graph, same size", twin[int(rng.integers(len(twin)))]
        else:
            yield "wrong-graph", other[int(rng.integers(len(other)))]


def test_ten_thousand_illegal_mappings_are_all_rejected(record_property):
    rng = np.random.default_rng(13)
    tried, accepted, kinds, legal_checked, legal_elsewhere = 0, 0, {}, 0, 0
    orders = {id(g): legal_orders(g, rng, 300) for g in GRAPHS}
    for graph in GRAPHS:
        others = [o for g in GRAPHS if g is not graph for o in orders[id(g)][:60]]
        twins = [o for g in GRAPHS if g is not graph and g.num_tasks == graph.num_tasks for o in orders[id(g)]]
        for order in orders[id(graph)][:40]:
            validate(graph, Mapping(order=order))   # legal orders pass: the checker is not refusing everything
            legal_checked += 1
        for kind, order in illegal_mappings(graph, orders[id(graph)], others, twins, rng):
            if legal_by_counters(graph, order):
                legal_elsewhere += 1                   # another graph's order can be legal here too: not illegal
                continue
            tried += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            try:
                validate(graph, Mapping(order=order))
                accepted += 1
            except MegasimError:
                pass
    print(f"\nvalidate(): {tried} generated illegal mappings, {accepted} accepted; by kind {kinds}; "
          f"{legal_checked} legal orders accepted; {legal_elsewhere} orders of another graph were legal here too")
    record_property("illegal_mappings_tried", tried)
    record_property("illegal_mappings_accepted", accepted)
    assert tried >= 10_000 and accepted == 0
    assert min(kinds.values()) >= 500, kinds
