"""The Perfetto trace: a track per resident slot of each SM, slices that nest, and utilisation counters.

The trace-event format wants the complete ("X") events of one thread to nest; Perfetto drops or misdraws
ones that overlap. Timestamps are compared as Perfetto reads them: microseconds times 1000, rounded.
"""
import json
from collections import defaultdict

import numpy as np
import pytest

from megasim.app.cli import main
from megasim.app.perfetto import SLOTS_PER_SM, resident_slots


def _ns(us: float) -> int:
    return round(us * 1000)


def overlapping_slices(events: list[dict]) -> int:
    """Slices on one tid that start inside another and end outside it (neither nested nor disjoint)."""
    by_tid = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_tid[e["tid"]].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    bad = 0
    for slices in by_tid.values():
        open_ends: list[int] = []
        for start, end in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                bad += 1
            open_ends.append(end)
    return bad


@pytest.fixture(scope="module", params=[("ResNet-2", "static"), ("ResNet-1", "ready_queue")],
                ids=["resnet2-static", "resnet1-ready_queue"])
def trace(request, tmp_path_factory):
    layer, mode = request.param
    path = tmp_path_factory.mktemp("trace") / "t.json"
    assert main(["simulate", "--layer", layer, "--mode", mode, "--trace", str(path), "--json"]) == 0
    return json.loads(path.read_text())["traceEvents"]


def test_no_slices_overlap_on_any_track(trace):
    blocks = [e for e in trace if e["ph"] == "X" and e["cat"] == "block"]
    assert len(blocks) > 2000
    assert len({e["tid"] for e in blocks}) > len({e["args"]["sm"] for e in blocks})  # several slots per SM
    assert overlapping_slices(trace) == 0


def test_each_track_is_named_by_its_sm_and_slot(trace):
    names = {e["tid"]: e["args"]["name"] for e in trace if e.get("name") == "thread_name"}
    for e in trace:
        if e["ph"] == "X":
            sm, slot = divmod(e["tid"], SLOTS_PER_SM)
            assert names[e["tid"]] == f"SM {sm} slot {slot}"
            assert e["cat"] == "spin" or e["args"]["sm"] == sm


def test_dram_and_fp32_utilisation_are_counter_tracks(trace):
    counters = defaultdict(list)
    for e in trace:
        if e["ph"] == "C":
            counters[e["name"]].append(e["args"]["utilisation (%)"])
    assert set(counters) == {"DRAM", "FP32"}
    for values in counters.values():
        assert len(values) == 200 and 0 < max(values) <= 100.5 and min(values) >= 0


def test_slots_follow_one_another_and_never_exceed_the_blocks_on_an_sm():
    rec = np.zeros(5, dtype=[("sm", "i4"), ("start_us", "f8"), ("end_us", "f8")])
    rec["sm"] = [0, 0, 0, 0, 1]
    rec["start_us"] = [0.0, 0.5, 1.0, 1.0, 0.0]
    rec["end_us"] = [1.0, 2.0, 3.0, 1.5, 9.0]
    slots, most = resident_slots(rec)
    assert slots.tolist() == [0, 1, 0, 2, 0] and most == 3
