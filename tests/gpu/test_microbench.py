"""Calibration measurements: pure helpers and file formats on the CPU, sane hardware numbers on a GPU.

CPU known answers come from constructed data (a dispatch trace with a known
slot latency, a bandwidth curve with a known knee); the GPU tests hold each
section to the datasheet (DRAM 30-110%, FFMA 50-105% of peak) and the
dispatcher to mostly in-order starts.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from megasim.app.calibrate import gpu_runs as cr
from megasim.app.calibrate import measure
from megasim.gpu import microbench as mb
from megasim.gpu import microbench_stats as ms
from megasim.contract.graph import build_graph
from megasim.contract.problem import Layer, Partition, WinogradVariant

from ..conftest import CALIBRATION_RAW

MICRO_KEYS = {"header", "dram", "l2", "fp32", "mma_tf32", "atomics", "launch", "dispatch", "dispatch_summary",
              "tasks"}
HEADER_KEYS = {"device", "driver", "driver_version", "runtime_version", "cupy_version", "git_commit",
               "kernel_build", "date_utc", "schema_version"}


# ---- pure helpers -----------------------------------------------------------------

def test_l2_knee_halfway_between_plateaus():
    l2 = 64 << 20
    sweep = [{"bytes": b << 20, "gbps": g} for b, g in
             [(1, 3000), (8, 9000), (16, 10000), (32, 10000), (48, 10000), (60, 10000), (64, 5000), (128, 4000),
              (256, 4000)]]
    k = ms.l2_knee(sweep, l2)
    assert k["l2_gbps"] == 10000 and k["dram_gbps"] == 4000 and k["midpoint_gbps"] == 7000
    assert (60 << 20) < k["knee_bytes"] < (64 << 20)


def _dispatch_trace(sms=4, slots=2, waves=6, work=1000, latency=300, swap=()):
    """Blocks in blockIdx order, round robin over SMs, each slot reused `latency` cycles after it frees."""
    n = sms * slots * waves
    rec = np.zeros((n, 6), dtype=np.int64)
    for b in range(n):
        sm, wave = b % sms, b // (sms * slots)
        start = wave * (work + latency) + b
        rec[b] = [sm, b, start, start, start + work, start + work]
    for a, c in swap:
        rec[[a, c], 1:] = rec[[c, a], 1:]
    return rec


def test_dispatch_stats_known_latency_and_order():
    st = ms.dispatch_stats(_dispatch_trace(), sm_count=4, slots_per_sm=2)
    assert st["measured_blocks_per_sm"] == 2
    assert st["spearman_start_vs_blockidx"] == pytest.approx(1.0)
    assert st["out_of_order_fraction"] == 0.0 and st["max_displacement"] == 0
    assert st["first_wave_smids"] == [0, 1, 2, 3]
    assert st["dispatch_latency_cycles"]["median"] == pytest.approx(300, abs=8)
    assert st["negative_latencies"] == 0
    swapped = ms.dispatch_stats(_dispatch_trace(swap=[(0, 5)]), sm_count=4, slots_per_sm=2)
    assert swapped["max_displacement"] == 5 and swapped["out_of_order_fraction"] > 0
    assert swapped["strict_max_displacement"] == 5


def test_forced_smem_fits_exactly_that_many_blocks():
    for occ in (1, 2, 4, 8, 16):
        s = mb.forced_smem(233472, 1024, occ)
        assert occ * (s + 1024) <= 233472 < (occ + 1) * (s + 1024)


def test_start_order_breaks_timer_ties_with_the_ticket():
    assert ms.start_order([2, 0, 1, 3], [0, 0, 0, 32]).tolist() == [2, 0, 1, 3]


def test_strict_displacement_counts_only_whole_ticks():
    assert ms.strict_max_displacement([0, 0, 0, 0]) == 0
    assert ms.strict_max_displacement([32, 0, 0, 64, 0]) == 4


def test_dispatch_summary_reads_latency_rate_and_lead_sms():
    rows = []
    for work, first in ((4000, [7, 6, 1, 2]), (4000, [6, 7, 3, 4]), (0, [7, 6, 5, 0])):
        st = ms.dispatch_stats(_dispatch_trace(), sm_count=4, slots_per_sm=2)
        rows.append({**st, "work_cycles": work, "first_wave_smids_by_blockidx": first})
    s = ms.dispatch_summary(rows)
    assert s["first_wave_lead_sms"] == [6, 7]
    assert s["latency_cycles"] == pytest.approx(300, abs=8) and s["blocks_per_us"] > 0


def test_gpu_short_name():
    assert ms.gpu_short_name("NVIDIA H200") == "h200"
    assert ms.gpu_short_name("NVIDIA H100 80GB HBM3") == "h100"


def test_l2_sizes_span_1mb_to_4x_l2():
    s = mb.l2_sizes(60 << 20)
    assert s[0] == 1 << 20 and s[-1] == 4 * (60 << 20) and s == sorted(set(s))


# ---- mapping plan, split, run records ----------------------------------------------

@pytest.fixture
def small_graph():
    layer = Layer(n=2, c=64, h=28, w=28, k=64, name="small")
    part = Partition(tiles_per_group=16, input_channels_per_task=16, gemm_mats_per_task=4,
                     gemm_k_per_task=32, output_channels_per_task=16, filter_k_per_task=4, threads=128)
    return build_graph(layer, WinogradVariant(4), part)


def test_mapping_plan_default_first_distinct_orders(small_graph):
    plan = cr.mapping_plan(small_graph)
    assert plan[0][0] == "paper" and plan[0][1] == cr.DEFAULT_PARAMS
    orders = {p[2].tobytes() for p in plan}
    assert len(orders) == len(plan)
    assert sum(p[0] == "paper" for p in plan) <= 1 + cr.GRID_MAPPINGS
    assert [p[1]["seed"] for p in plan if p[0] == "random_topo"] == list(cr.RANDOM_SEEDS)
    assert any(p[0] == "paper" and p[1]["dig"] == 0 for p in plan)


@pytest.mark.parametrize("name", ["ResNet-1", "DenseNet", "VGG-1", "YOLOv3-5"])
def test_split_holds_out_three_mappings_never_the_default(name):
    s = cr.split_for(name, 13)
    assert s.count("heldout") == cr.HELDOUT_MAPPINGS and s[0] == "train"
    assert s == cr.split_for(name, 13)


@pytest.mark.parametrize("name", cr.HELDOUT_LAYERS)
def test_heldout_layers_are_held_out_whole(name):
    assert set(cr.split_for(name, 13)) == {"heldout"}


def test_run_record_has_exactly_the_format_fields(small_graph):
    g = small_graph
    rec = cr.run_record(g.layer, 4, g.partition, "paper", {"dig": 0, "dgo": 512, "m": 4}, "train",
                        {"median_us": 10.0, "p10_us": 9.0, "p90_us": 11.0}, 12.0, [1.0, 2.0, 6.0, 2.0])
    assert set(rec) == set(cr.RUN_FIELDS)
    assert set(rec["layer"]) == {"n", "c", "h", "w", "k", "name"}
    doc = json.loads(json.dumps({"header": {}, "runs": [rec]}))
    assert cr.check_runs_doc(doc) == []
    doc["runs"][0]["split"] = "test"
    assert cr.check_runs_doc(doc)


def test_task_bytes_sum_over_one_type(small_graph):
    from megasim.contract.problem import Op
    total = sum(cr.task_bytes(small_graph, op)[0] for op in Op)
    assert total == pytest.approx(float(small_graph.flops.sum()))


def test_calibrate_measure_writes_the_three_files_and_then_skips_them(tmp_path, monkeypatch):
    header = {k: "x" for k in HEADER_KEYS} | {"schema_version": 1}
    monkeypatch.setattr(measure, "make_header", lambda: dict(header))
    monkeypatch.setattr(measure, "measure_hardware", lambda reps: {s: {} for s in mb.SECTIONS} | {
        "dispatch": [], "dispatch_summary": {}})
    monkeypatch.setattr(cr, "measure_tasks", lambda gpu, reps, layers: [])
    monkeypatch.setattr(cr, "measure_runs", lambda gpu, reps, layers, budget_s: (
        {"header_extra": {"reps": reps}, "runs": []}, {"layer": {}, "partition": {}, "strategy": "paper",
                                                        "params": {}, "records": []}))
    status = measure.calibrate_measure("h200", str(tmp_path), 20, parts=("hardware", "runs"))
    assert status == {"hardware": "done", "runs": "done"}
    paths = [tmp_path / f"h200_{name}.json" for name in ("micro", "runs", "trace_resnet2")]
    micro = json.loads(Path(paths[0]).read_text())
    assert set(micro) == MICRO_KEYS and HEADER_KEYS <= set(micro["header"])
    runs = json.loads(Path(paths[1]).read_text())
    assert cr.check_runs_doc(runs) == [] and runs["header"]["reps"] == 20
    trace = json.loads(Path(paths[2]).read_text())
    assert {"header", "layer", "partition", "strategy", "params", "records"} <= set(trace)
    monkeypatch.setattr(measure, "measure_hardware", None)
    monkeypatch.setattr(cr, "measure_runs", None)
    assert measure.calibrate_measure("h200", str(tmp_path), 20, parts=("hardware", "runs")) == status
    not_begun = dict.fromkeys([p for p in measure.PARTS if p != "tasks"], "left")
    assert measure.calibrate_measure("h200", str(tmp_path), 20, budget_s=0) == not_begun


def test_a_micro_file_from_before_a_section_existed_gets_that_section_alone(tmp_path, monkeypatch):
    """A raw folder measured before the tensor cores' section resumes: only the missing section is measured,
    and the header says when it was added."""
    header = {k: "x" for k in HEADER_KEYS} | {"schema_version": 1}
    old = {s: {"old": 1} for s in mb.SECTIONS if s != "mma_tf32"} | {"header": header, "tasks": [{"op": "gemm"}]}
    (tmp_path / "h100_micro.json").write_text(json.dumps(old))
    asked = []
    monkeypatch.setattr(measure, "make_header", lambda: dict(header))
    monkeypatch.setattr(measure, "measure_hardware",
                        lambda reps, sections: asked.append(sections) or {s: {"new": 1} for s in sections})
    assert measure.calibrate_measure("h100", str(tmp_path), 20, parts=("hardware", "tasks")) == {"hardware": "done"}
    micro = json.loads((tmp_path / "h100_micro.json").read_text())
    assert asked == [["mma_tf32"]] and micro["mma_tf32"] == {"new": 1} and micro["fp32"] == {"old": 1}
    assert micro["header"]["sections_added"]["mma_tf32"] == {"date_utc": "x", "kernel_build": "x"}


@pytest.mark.gpu
def test_calibrating_a_gpu_without_a_spec_writes_one_and_a_second_call_continues(tmp_path, capsys):
    from megasim.app.cli import main
    argv = ["calibrate", "--gpu", "newgpu", "--raw", str(tmp_path / "raw"), "--out", str(tmp_path / "newgpu.toml"),
            "--budget-s", "1", "--reps", "5"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    spec, micro = tmp_path / "gpus" / "newgpu.toml", tmp_path / "raw" / "newgpu_micro.json"
    assert f"wrote {spec}" in out and "run the same command again" in out and "runs" in out
    assert spec.exists() and micro.exists() and not (tmp_path / "newgpu.toml").exists()
    written = micro.stat().st_mtime_ns
    assert main(argv) == 0 and "wrote" not in capsys.readouterr().out.split("left")[0]
    assert micro.stat().st_mtime_ns == written
    assert main(["simulate", "--gpu", str(spec), "--layer", "ResNet-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"]


# ---- the committed raw files keep the format ------------------------------------------

@pytest.mark.parametrize("path", sorted(CALIBRATION_RAW.glob("*_micro.json")), ids=lambda p: p.name)
def test_committed_micro_file(path):
    """Every section; a file measured before the tensor cores' section may lack it alone (a calibration of that
    folder adds it first, and the 3xTF32 law's fit refuses the folder until then)."""
    doc = json.loads(path.read_text())
    assert MICRO_KEYS - {"mma_tf32"} <= set(doc) <= MICRO_KEYS and HEADER_KEYS <= set(doc["header"])
    assert doc["header"]["schema_version"] == mb.SCHEMA_VERSION
    for t in doc["tasks"]:
        assert {"op", "layer", "partition", "blocks", "blocks_per_sm", "time_us", "flops", "bytes"} <= set(t)


@pytest.mark.parametrize("path", sorted(CALIBRATION_RAW.glob("*_runs.json")), ids=lambda p: p.name)
def test_committed_runs_file(path):
    doc = json.loads(path.read_text())
    assert HEADER_KEYS <= set(doc["header"]) and cr.check_runs_doc(doc) == []


TRACE_FILES = sorted(p for p in CALIBRATION_RAW.glob("*_trace_*.json") if not p.name.endswith("_trace_sample_summary.json"))


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: p.name)
def test_committed_trace_file(path):
    from megasim.contract.records import TB_RECORD
    doc = json.loads(path.read_text())
    assert doc["records"] and set(doc["records"][0]) == set(TB_RECORD.names)


# ---- on the GPU ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("cupy")
    return mb._Bench()


@pytest.fixture(scope="module")
def spec(bench):
    from megasim.app.catalog import load_gpu
    return load_gpu(ms.gpu_short_name(mb.make_header()["device"]))


@pytest.mark.gpu
def test_dram_bandwidth_within_datasheet(bench, spec):
    d = mb.measure_dram(bench, reps=3)
    for key in ("read_gbps", "write_gbps", "copy_gbps"):
        assert 0.3 * spec.dram_gbps <= d[key] <= 1.1 * spec.dram_gbps, (key, d[key])


@pytest.mark.gpu
def test_ffma_rate_within_peak(bench, spec):
    f = mb.measure_fp32(bench, reps=2, iters=2048)
    assert 0.5 <= f["flop_per_cycle_per_sm"] / spec.fp32_flops_per_cycle_per_sm <= 1.05, f
    assert 500 < f["sm_clock_mhz"] < 3000


@pytest.mark.gpu
def test_dispatch_mostly_in_order(bench):
    rows = mb.measure_dispatch(bench, configs=[(256, 2, 2000)])
    assert rows[0]["spearman_start_vs_blockidx"] > 0.9
    assert rows[0]["measured_blocks_per_sm"] == 2


@pytest.mark.gpu
def test_atomics_and_launch_are_positive(bench):
    a = mb.measure_atomics(bench, reps=3, clock_mhz=1980.0)
    assert 50 < a["latency_cycles"] < 5000 and not a["pingpong"]["failed"]
    lau = mb.measure_launch(bench, reps=4, n=50)
    assert 0 < lau["graph_us_per_launch"] < 20 and 0 < lau["plain_us_per_launch"] < 50
