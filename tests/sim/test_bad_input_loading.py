"""Bad sizes, values, encodings and types: each one line on stderr, exit code 2, nothing left behind.

One case is one line of `CASES`: an id, the command (`{tmp}` is the test's folder), the files to write
there first, and a phrase the message must hold. Every command also names an output under `{tmp}/out`,
so "nothing left behind" is checked the same way for all: the folder holds only the files written.
The CLI runs in-process; an alarm turns a hang into a failure instead of a stuck CI job.
"""
import json
import re
import subprocess
import sys

import pytest

from megasim.app.catalog import SCENARIOS
from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import describe
from megasim.contract.problem import Layer

from .conftest import assert_refused, write_files

SPEC = (SCENARIOS / "gpus" / "h200.toml").read_text()
PROFILE = (SCENARIOS / "calibrations" / "h200.toml").read_text()
RUNS = json.loads((SCENARIOS / "calibrations" / "raw" / "h200_runs.json").read_text())
RUN = next(r for r in RUNS["runs"] if r["layer"]["name"] == "ResNet-3")
GRAPH = build_graph(Layer(2, 32, 20, 20, 32))
MAPPING = {"schema": 1, **describe(GRAPH), "mode": "static", "strategy": "paper", "params": {},
           "order": make(GRAPH, "paper").order.tolist()}


def edit(text: str, key: str, value: str) -> str:
    """`text` with the first line `key = ...` set to `key = value` (a spec's [sources] repeat the keys later)."""
    out, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
    assert n == 1, key
    return out


def without(text: str, table: str) -> str:
    """`text` without the `[table]` and its lines."""
    return re.sub(rf"^\[{table}\]\n(?:[^\[\n].*\n|\n)*", "", text, flags=re.M)


def mapping(**fields) -> str:
    return json.dumps({**MAPPING, **fields})


def runs(*changes: dict, doc: dict | None = None) -> str:
    """A runs file of the ResNet-3 run, then one copy per change (a None value drops the key)."""
    rows = [RUN] + [{k: v for k, v in {**RUN, **c}.items() if v is not None} for c in changes]
    return json.dumps({"header": RUNS["header"], "runs": rows} if doc is None else doc)


SHAPE = "simulate --shape 2,32,20,20,32 --trace {tmp}/out/t.json"
MAP = "simulate --mapping {tmp}/m.json --trace {tmp}/out/t.json"
GPU = "simulate --gpu {tmp}/g.toml --shape 2,32,20,20,32 --trace {tmp}/out/t.json"
VAL = "validate --profile {tmp}/p.toml --measurements {tmp}/runs.json --out {tmp}/out --json"
OK_RUNS = {"runs.json": runs()}
ORDER = MAPPING["order"]

CASES = [
    # size guards: refused before anything is built, with the estimate
    ("shape-17GB", "simulate --shape 64,128,100000,100000,128 --trace {tmp}/out/t.json", {}, "thread-block tasks"),
    ("shape-n-1e6", "simulate --shape 1000000,64,56,56,64 --trace {tmp}/out/t.json", {}, "of memory is available"),
    ("shape-overflow", "simulate --shape 99999999999999999999999,1,1,1,1 --trace {tmp}/out/t.json", {}, "below 2^31"),
    ("shape-buffer", "simulate --shape 2000000000,2000000000,4,4,1 --partition tiles_per_group=2000000000,"
     "input_channels_per_task=2000000000 --trace {tmp}/out/t.json", {}, "buffer x alone"),
    ("map-task-1e30", MAP, {"m.json": mapping(order=[10**30] + ORDER[1:])}, "order[0]"),
    ("map-hw-1e7", MAP, {"m.json": mapping(layer={**MAPPING["layer"], "h": 10**7, "w": 10**7})}, "thread-block tasks"),
    ("map-order-floats", MAP, {"m.json": mapping(order=[t + 0.5 for t in ORDER])}, "order[0] should be a valid integer"),
    ("map-order-float-ints", MAP, {"m.json": mapping(order=[float(t) for t in ORDER])}, "order[0]"),
    ("map-order-strings", MAP, {"m.json": mapping(order=[str(t) for t in ORDER])}, "order[0] should be a valid integer"),
    ("map-order-bools", MAP, {"m.json": mapping(order=[True] * len(ORDER))}, "order[0]"),
    ("map-order-nan", MAP, {"m.json": mapping(order=[float("nan")])}, "order[0]"),
    ("map-params-str", MAP, {"m.json": mapping(params="x")}, "params should be a valid dictionary"),
    ("map-variant-str", MAP, {"m.json": mapping(variant="4")}, "variant"),
    ("map-variant-float", MAP, {"m.json": mapping(variant=4.0)}, "variant"),
    ("map-variant-3", MAP, {"m.json": mapping(variant=3)}, "must be one of 2, 4, 6"),
    ("map-layer-negative", MAP, {"m.json": mapping(layer={**MAPPING["layer"], "n": -1})}, "layer.n"),
    ("map-layer-bool", MAP, {"m.json": mapping(layer={**MAPPING["layer"], "c": True})}, "layer.c"),
    ("map-layer-extra", MAP, {"m.json": mapping(layer={**MAPPING["layer"], "z": 1})}, "layer.z is not a known field"),
    ("map-partition-str", MAP, {"m.json": mapping(partition={**MAPPING["partition"], "threads": "128"})},
     "partition.threads"),
    ("map-mode-int", MAP, {"m.json": mapping(mode=3)}, "mode"),
    ("map-top-list", MAP, {"m.json": json.dumps([MAPPING])}, "not a schema-1 mapping file"),
    ("map-not-utf8", MAP, {"m.json": b'{"schema": 1, "order": [\xff]}'}, "not UTF-8 text (byte 0xff at offset 24)"),
    ("map-deep", MAP, {"m.json": "[" * 100_000}, "malformed JSON"),
    # GPU spec TOML
    ("spec-threads-str", GPU, {"g.toml": edit(SPEC, "max_threads_per_sm", '"2048"')}, "max_threads_per_sm"),
    ("spec-clock-nan", GPU, {"g.toml": edit(SPEC, "clock_mhz", "nan")}, "clock_mhz should be a finite number"),
    ("spec-clock-inf", GPU, {"g.toml": edit(SPEC, "clock_mhz", "inf")}, "clock_mhz"),
    ("spec-dram-eff-neg", GPU, {"g.toml": edit(SPEC, "dram_efficiency", "-3.0")}, "[model] dram_efficiency"),
    ("spec-dram-eff-zero", GPU, {"g.toml": edit(SPEC, "dram_efficiency", "0.0")}, "dram_efficiency"),
    ("spec-dram-eff-str", GPU, {"g.toml": edit(SPEC, "dram_efficiency", '"x"')}, "dram_efficiency"),
    ("spec-gemm-eff-2", GPU, {"g.toml": edit(SPEC, "compute_efficiency", "{ gemm = 2.0 }")}, "compute_efficiency.gemm"),
    ("spec-eff-unknown-op", GPU, {"g.toml": edit(SPEC, "compute_efficiency", "{ conv = 0.5 }")}, "compute_efficiency.conv"),
    ("spec-sm-999", GPU, {"g.toml": edit(SPEC, "first_wave_lead_sms", "[999]")}, "first_wave_lead_sms"),
    ("spec-sm-neg", GPU, {"g.toml": edit(SPEC, "first_wave_lead_sms", "[-1]")}, "first_wave_lead_sms[0]"),
    ("spec-sm-dup", GPU, {"g.toml": edit(SPEC, "first_wave_lead_sms", "[3, 3]")}, "distinct SM ids"),
    ("spec-sm-count-0", GPU, {"g.toml": edit(SPEC, "sm_count", "0")}, "sm_count"),
    ("spec-sm-count-bool", GPU, {"g.toml": edit(SPEC, "sm_count", "true")}, "sm_count"),
    ("spec-sm-count-huge", GPU, {"g.toml": edit(SPEC, "sm_count", "1000000000")}, "sm_count"),
    ("spec-no-hardware", GPU, {"g.toml": without(SPEC, "hardware")}, "missing field(s)"),
    ("spec-odd-table", GPU, {"g.toml": SPEC + "\n[hardwar]\nx = 1\n"}, "not hardwar"),
    ("spec-hardware-int", GPU, {"g.toml": "hardware = 3\n"}, "[hardware]"),
    ("spec-not-utf8", GPU, {"g.toml": SPEC.encode().replace(b"NVIDIA H200 SXM", b"NVIDIA \xff")}, "not UTF-8"),
    # calibration profiles, read by validate before any run is simulated
    ("profile-dram-eff-neg", VAL, {"p.toml": edit(PROFILE, "dram_efficiency", "-3.0"), **OK_RUNS}, "dram_efficiency"),
    ("profile-dram-eff-zero", VAL, {"p.toml": edit(PROFILE, "dram_efficiency", "0.0"), **OK_RUNS}, "dram_efficiency"),
    ("profile-dram-eff-str", VAL, {"p.toml": edit(PROFILE, "dram_efficiency", '"x"'), **OK_RUNS}, "dram_efficiency"),
    ("profile-eff-nan", VAL, {"p.toml": edit(PROFILE, "l2_efficiency", "nan"), **OK_RUNS}, "l2_efficiency"),
    ("profile-no-hardware", VAL, {"p.toml": without(PROFILE, "hardware"), **OK_RUNS}, "; missing [hardware]\n"),
    ("profile-gpu-nosuch", VAL, {"p.toml": edit(PROFILE, "gpu", '"nosuch"'), **OK_RUNS}, "unknown GPU 'nosuch'"),
    ("profile-sm-999", VAL, {"p.toml": edit(PROFILE, "first_wave_lead_sms", "[999]"), **OK_RUNS}, "0..131"),
    ("profile-sm-neg", VAL, {"p.toml": edit(PROFILE, "first_wave_lead_sms", "[-1]"), **OK_RUNS}, "first_wave_lead_sms"),
    ("profile-unknown-field", VAL, {"p.toml": edit(PROFILE, "l2_efficiency", "1.0\nwarp = 2"), **OK_RUNS},
     "unknown field(s) ['warp']"),
    ("profile-interval-str", VAL, {"p.toml": edit(PROFILE, "fused_ratio", '"x"'), **OK_RUNS}, "uncertainty.fused_ratio"),
    ("profile-not-utf8", VAL, {"p.toml": PROFILE.encode().replace(b"NVIDIA H200", b"\xfe"), **OK_RUNS}, "not UTF-8"),
    # measurement files: refused at load, before minutes of simulation
    ("runs-empty", VAL, {"p.toml": PROFILE, "runs.json": runs(doc={"runs": []})}, "needs at least 1"),
    ("runs-top-list", VAL, {"p.toml": PROFILE, "runs.json": json.dumps([RUN])}, "not a runs file"),
    ("runs-no-layer", VAL, {"p.toml": PROFILE, "runs.json": runs({"layer": None})}, "runs[1].layer is missing"),
    ("runs-time-str", VAL, {"p.toml": PROFILE, "runs.json": runs({"fused_us": "fast"})}, "runs[1].fused_us"),
    ("runs-time-neg", VAL, {"p.toml": PROFILE, "runs.json": runs({"nonfused_us": -1.0})}, "runs[1].nonfused_us"),
    ("runs-split", VAL, {"p.toml": PROFILE, "runs.json": runs({"split": "test"})}, "runs[1].split"),
    ("runs-kernels-3", VAL, {"p.toml": PROFILE, "runs.json": runs({"nonfused_kernels_us": [1.0] * 3})},
     "nonfused_kernels_us has 3 items"),
    ("runs-strategy", VAL, {"p.toml": PROFILE, "runs.json": runs({"strategy": "best"})}, "unknown mapping strategy"),
    ("runs-params", VAL, {"p.toml": PROFILE, "runs.json": runs({"params": {"dig": -4}})}, "runs[1]: paper mapping"),
    ("runs-partition", VAL, {"p.toml": PROFILE, "runs.json": runs({"partition": {"tiles": 4}})}, "unknown field"),
    ("runs-not-utf8", VAL, {"p.toml": PROFILE, "runs.json": b'{"runs": ["\xff"]}'}, "not UTF-8"),
    ("trace-not-utf8", SHAPE + " --policy replay --replay-trace {tmp}/r.json", {"r.json": b'{"records": "\xff"}'},
     "not UTF-8"),
    ("trace-sm-str", SHAPE + " --policy replay --replay-trace {tmp}/r.json", {"r.json": json.dumps({"records": [
        {"block": 0, "task": 0, "op": 0, "sm": "x", "dispatch_us": 0, "start_us": 0, "ready_us": 0, "end_us": 1}]})},
     "not a trace file"),
    # arguments
    ("seed-neg", SHAPE + " --strategy random_topo --seed -1", {}, "seed must be an integer >= 0"),
    ("seed-neg-opt", SHAPE + " --strategy random_topo --opt seed=-1", {}, "seed must be an integer >= 0"),
    ("jobs-0", VAL + " --jobs 0", {"p.toml": PROFILE, **OK_RUNS}, "--jobs must be a positive"),
    ("jobs-neg", VAL + " --jobs -2", {"p.toml": PROFILE, **OK_RUNS}, "--jobs must be a positive"),
]


@pytest.mark.parametrize("argv, files, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, alarm, argv, files, phrase):
    write_files(tmp_path, files)
    rc = main(argv.format(tmp=tmp_path).split())
    out, err = capsys.readouterr()
    assert_refused(rc, err, phrase)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)


@pytest.mark.parametrize("argv, files", [
    (MAP, {"m.json": mapping()}),
    (GPU, {"g.toml": SPEC}),
    (GPU, {"g.toml": edit(SPEC, "compute_efficiency", "{ gemm = 1 }")}),
    (SHAPE + " --strategy random_topo --seed 0", {}),
], ids=["mapping", "spec", "spec-int-for-float", "seed-0"])
def test_the_good_files_the_cases_start_from_run(tmp_path, capsys, alarm, argv, files):
    """The bad cases are one edit away from these, so each fails for its edit, not for something else."""
    write_files(tmp_path, files)
    rc = main(argv.format(tmp=tmp_path).split())
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "t.json").exists()


def test_the_good_profile_and_runs_validate(tmp_path, capsys, alarm):
    write_files(tmp_path, {"p.toml": PROFILE, **OK_RUNS})
    rc = main(VAL.format(tmp=tmp_path).split() + ["--jobs", "1"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out)["summary"]["mape"]["heldout"]["runs"] == 1


def test_a_simulation_profile_is_checked_too(tmp_path, capsys, monkeypatch, alarm):
    """`simulate --gpu h200` reads the committed profile: a bad one there is refused the same way."""
    import megasim.app.calibrate.profile as profile
    bad = tmp_path / "h200.toml"
    bad.write_text(edit(PROFILE, "dram_efficiency", "-3.0"))
    monkeypatch.setattr(profile, "profile_path", lambda gpu: bad)
    rc = main(["simulate", "--shape", "2,32,20,20,32"])
    err = capsys.readouterr().err
    assert rc == 2 and "dram_efficiency" in err and len(err.splitlines()) == 1
    bad.write_text(edit(PROFILE, "gpu", '"h100"'))
    rc = main(["simulate", "--shape", "2,32,20,20,32"])
    assert rc == 2 and "profile of 'h200'" in capsys.readouterr().err


def test_the_spec_that_hung_now_exits_at_once(tmp_path):
    """dram_efficiency = -3 once ran the bandwidth queue backwards forever; in a real process, with a timeout."""
    (tmp_path / "g.toml").write_text(edit(SPEC, "dram_efficiency", "-3.0"))
    done = subprocess.run([sys.executable, "-m", "megasim.app.cli", "simulate", "--gpu", str(tmp_path / "g.toml"),
                           "--shape", "2,32,20,20,32"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "dram_efficiency" in done.stderr


def test_the_size_estimate_refuses_only_what_does_not_fit():
    """Refused when tasks x BYTES_PER_TASK passes the memory available, with the figures in the message."""
    from megasim.contract.graph import Geometry
    from megasim.contract.problem import Partition, WinogradVariant
    from megasim.contract.ranges import DataRanges
    from megasim.contract.size import BYTES_PER_TASK, check_size
    layer, variant, part = Layer(64, 64, 56, 56, 64), WinogradVariant(4), Partition()
    tasks = Geometry.of(layer, variant, part).num_tasks
    ranges = DataRanges.of(layer, variant, part)
    assert check_size(ranges, tasks, available=tasks * BYTES_PER_TASK) == tasks * BYTES_PER_TASK
    with pytest.raises(MegasimError, match=f"is {tasks:,} thread-block tasks; .* needs about .* but only"):
        check_size(ranges, tasks, available=tasks * BYTES_PER_TASK - 1)


def test_a_machine_short_of_memory_refuses_an_ordinary_layer(tmp_path, capsys, monkeypatch):
    import megasim.contract.size as size
    monkeypatch.setattr(size, "available_memory_bytes", lambda: 10_000)
    rc = main(["simulate", "--shape", "2,32,20,20,32", "--trace", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "10 KB of memory is available" in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())
