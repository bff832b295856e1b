"""Measured timelines: the trace file `bench --trace` writes, `megasim compare` and its overlay figure."""
import json

import numpy as np
import pytest

from ..conftest import CALIBRATION_RAW
from megasim.app.cli import main
from megasim.app.measured_trace import problem_meta, read_measured, write_measured_trace
from megasim.app.overlay import busy_sms, from_first_start, plot_overlay, task_errors
from megasim.contract.graph import build_graph
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.mapping import make
from megasim.contract.problem import Op
from megasim.contract.records import TB_RECORD, empty_records

TRACE = CALIBRATION_RAW / "h200_trace_resnet2.json"


def _records(graph, seed: int, t0: float = 0.0) -> np.ndarray:
    """One block per task in order, on SMs round robin; every GEMM spins a little first."""
    rng = np.random.default_rng(seed)
    n = graph.num_tasks
    rec = empty_records(n)
    rec["block"] = np.arange(n)
    rec["task"] = np.arange(n)
    rec["op"] = graph.op
    rec["sm"] = np.arange(n) % 7
    rec["start_us"] = rec["dispatch_us"] = t0 + np.arange(n) * 0.25
    rec["ready_us"] = rec["start_us"] + np.where(graph.op == Op.GEMM, 0.5, 0.0)
    rec["end_us"] = rec["ready_us"] + rng.uniform(1, 3, n)
    return rec


def test_measured_trace_round_trips_both_launches(tmp_path, tiny_layer, tiny_partition, f43):
    graph = build_graph(tiny_layer, f43, tiny_partition)
    mapping = make(graph, "paper")
    launches = {"fused": _records(graph, 0, t0=0.0), "nonfused": _records(graph, 1)}
    path = write_measured_trace(tmp_path / "m.json", launches, {"header": {"device": "NVIDIA H200"},
                                                               **problem_meta(graph, mapping, "persistent")})
    doc = json.loads(path.read_text())
    assert {e["pid"] for e in doc["traceEvents"]} == {0, 1}
    meta, back = read_measured(path)
    assert meta["mode"] == "persistent" and meta["order"] == mapping.order.tolist()
    for launch, rec in launches.items():
        got = back[launch]
        assert got.dtype == TB_RECORD
        for field in ("block", "task", "op", "sm"):
            assert (got[field] == rec[field]).all(), field
        for field in ("start_us", "ready_us", "end_us"):
            assert np.allclose(got[field], rec[field], atol=1e-3), field


def test_task_errors_are_relative_to_the_measured_run():
    measured = np.zeros(2, dtype=TB_RECORD)
    measured["op"] = [Op.INPUT_TRANSFORM, Op.GEMM]
    measured["start_us"] = measured["ready_us"] = [0.0, 10.0]
    measured["end_us"] = [10.0, 30.0]
    simulated = measured.copy()
    simulated["end_us"] = [12.0, 40.0]
    rows = {r["op"]: r for r in task_errors(measured, simulated)}
    assert rows["input_transform"]["work_error"] == pytest.approx(0.2)
    assert rows["gemm"]["work_error"] == pytest.approx(0.5)
    assert rows["all"]["span_us_measured"] == 30.0 and rows["all"]["span_error"] == pytest.approx(1 / 3)


def test_busy_sms_counts_an_sm_once_however_many_blocks_it_runs():
    rec = np.zeros(3, dtype=TB_RECORD)
    rec["sm"] = [0, 0, 1]
    rec["ready_us"] = [0.0, 2.0, 5.0]
    rec["end_us"] = [4.0, 6.0, 10.0]
    share = busy_sms(rec, np.array([0.0, 5.0, 10.0]), num_sms=4)
    assert share.tolist() == [0.25, 0.3]  # SM 0 busy 0-6, SM 1 busy 5-10, of 4 SMs: 4/20, then (1 + 5)/20


def test_timelines_are_drawn_from_their_first_block_start():
    rec = np.zeros(2, dtype=TB_RECORD)
    rec["start_us"] = [3.5, 4.0]
    rec["ready_us"] = rec["dispatch_us"] = rec["start_us"]
    rec["end_us"] = [5.0, 6.0]
    assert from_first_start(rec)["end_us"].tolist() == [1.5, 2.5]


def test_compare_renders_the_committed_measured_trace(tmp_path, capsys):
    """The calibration's ResNet-2 trace of the H200 against the simulated run of the same mapping."""
    png = tmp_path / "overlay.png"
    assert main(["compare", str(TRACE), "--plot", str(png), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["op"]: r for r in doc["errors"]}
    assert set(rows) == {"filter_transform", "input_transform", "gemm", "output_transform", "all"}
    assert rows["all"]["blocks_measured"] == rows["all"]["blocks_simulated"] == 2172
    assert abs(rows["all"]["span_error"]) < 0.25  # the calibrated model is within a few percent here
    assert doc["gpu"] == "h200" and doc["policy"] == DEFAULT_POLICY  # the policy `simulate` predicts under
    assert png.stat().st_size > 50_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_overlay_writes_pdf_by_extension(tmp_path, tiny_layer, tiny_partition, f43):
    graph = build_graph(tiny_layer, f43, tiny_partition)
    plot_overlay(_records(graph, 0), _records(graph, 1, t0=2.0), tmp_path / "o.pdf", num_sms=8)
    assert (tmp_path / "o.pdf").read_bytes()[:4] == b"%PDF"


@pytest.mark.parametrize("content, message", [
    ({"layers": []}, "not a measured trace"),
    ({"records": [], "partition": {}}, "does not say which run"),
])
def test_compare_refuses_what_is_not_a_measured_trace(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    assert main(["compare", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("megasim: error:") and message in err and len(err.strip().splitlines()) == 1


def test_compare_refuses_a_launch_the_trace_lacks(capsys):
    assert main(["compare", str(TRACE), "--launch", "nonfused"]) == 2
    assert "no nonfused launch" in capsys.readouterr().err


def test_trace_kernels_stay_out_of_the_timed_build_and_its_hash(tmp_path):
    import shutil
    from megasim.gpu.backend import DEFAULT_CONFIG, KERNEL_DIR, TRACE_ONLY, kernel_build_hash, kernel_source
    assert "_trace(" not in kernel_source(DEFAULT_CONFIG) and "ms_gemm_kernel_trace(" in kernel_source(DEFAULT_CONFIG,
                                                                                                   TRACE_ONLY)
    copy = tmp_path / "kernels"
    shutil.copytree(KERNEL_DIR, copy)
    assert kernel_build_hash(copy) == kernel_build_hash()
    (copy / "trace_nonfused.cu").write_text("// changed")
    assert kernel_build_hash(copy) == kernel_build_hash()
    (copy / "nonfused.cu").write_text("// changed")
    assert kernel_build_hash(copy) != kernel_build_hash()
