"""Perfetto export and timeline plots, on synthetic TB_RECORD arrays."""
import json

import numpy as np
import pytest

from megasim.app.perfetto import OP_CNAMES, SLOTS_PER_SM, write_trace
from megasim.app.plot import plot_timeline
from megasim.contract.problem import Op
from megasim.contract.records import TB_RECORD, empty_records


def synthetic(n: int, num_sms: int, slots: int = 2, seed: int = 0) -> np.ndarray:
    """Blocks dealt round-robin to SM slots; every third block spins before working."""
    rng = np.random.default_rng(seed)
    rec = empty_records(n)
    rec["block"] = rec["task"] = np.arange(n)
    rec["op"] = np.where(np.arange(n) < n // 10, Op.FILTER_TRANSFORM, rng.integers(1, 4, n))
    slot = np.arange(n) % (num_sms * slots)
    rec["sm"] = slot % num_sms
    wave = np.arange(n) // (num_sms * slots)
    rec["dispatch_us"] = wave * 10.0 + rng.uniform(0, 1, n)
    rec["start_us"] = rec["dispatch_us"] + 0.5
    rec["ready_us"] = rec["start_us"] + np.where(np.arange(n) % 3 == 0, rng.uniform(0.5, 3, n), 0.0)
    rec["end_us"] = rec["ready_us"] + rng.uniform(2, 6, n)
    return rec


def test_trace_is_json_with_tracks_for_the_slots_of_each_sm_used(tmp_path):
    rec = synthetic(600, num_sms=40)
    rec["sm"][rec["sm"] == 7] = 8  # SM 7 idle: it must get no track
    path = write_trace(rec, tmp_path / "trace.json", {"name": "H200", "layer": "ResNet-1"})
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    tracks = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    sms = {tid // SLOTS_PER_SM for tid in tracks}
    assert sms == set(np.unique(rec["sm"]).tolist()) and 7 not in sms
    assert {e["tid"] for e in events if e["ph"] == "X"} == tracks
    assert len({e["pid"] for e in events}) == 1
    slices = [e for e in events if e["ph"] == "X"]
    spins = int((rec["ready_us"] > rec["start_us"]).sum())
    assert len([e for e in slices if e["cat"] == "block"]) == len(rec)
    assert len([e for e in slices if e["cat"] == "spin"]) == spins
    assert doc["otherData"]["layer"] == "ResNet-1"


def test_trace_slices_carry_times_colours_and_args(tmp_path):
    rec = np.zeros(1, dtype=TB_RECORD)
    rec[0] = (5, 17, Op.GEMM, 3, 1.0, 2.0, 4.5, 10.0)
    doc = json.loads(write_trace(rec, tmp_path / "t.json").read_text())
    block, spin = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert (block["ts"], block["dur"], block["tid"]) == (2.0, 8.0, 3 * SLOTS_PER_SM)
    assert (spin["ts"], spin["dur"]) == (2.0, 2.5)
    assert block["cname"] == OP_CNAMES[Op.GEMM]
    assert block["args"] == {"block": 5, "task": 17, "op": "gemm", "sm": 3, "dispatch_us": 1.0}


def test_op_colours_are_distinct():
    assert len(set(OP_CNAMES.values())) == len(Op)


def test_trace_write_leaves_no_temporary(tmp_path):
    write_trace(synthetic(50, 4), tmp_path / "out.json")
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def _is_png(path):
    return path.stat().st_size > 10_000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_timeline_writes_png(tmp_path):
    path = tmp_path / "timeline.png"
    plot_timeline(synthetic(1000, 80), path, "synthetic ResNet-1", num_sms=80)
    assert _is_png(path)
    assert [p.name for p in tmp_path.iterdir()] == ["timeline.png"]


@pytest.mark.parametrize("n", [0, 1])
def test_plot_handles_tiny_records(tmp_path, n):
    plot_timeline(synthetic(n, 4), tmp_path / "tiny.png", "tiny", num_sms=4)
    assert (tmp_path / "tiny.png").stat().st_size > 0


def test_mix_is_the_exact_mean_number_running_per_bin():
    from megasim.app.plot import _mean_running
    rec = np.zeros(2, dtype=TB_RECORD)
    rec["ready_us"] = [0.0, 5.0]
    rec["end_us"] = [10.0, 15.0]
    means = _mean_running(rec, np.array([0.0, 5.0, 10.0, 15.0, 20.0]), "ready_us", "end_us")
    assert means.tolist() == [1.0, 2.0, 1.0, 0.0]
