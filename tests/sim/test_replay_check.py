"""The replay target as `megasim validate` reports it: each GPU's traced placements replayed, from committed data."""
import json

import pytest

from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.calibrate.replay_check import replay_rows, replay_section, replay_summary, sample_paths, validate_replay
from megasim.app.catalog import load_gpu

from ..conftest import CALIBRATION_RAW, REPO, STUDIES, assert_close

REPORTS = {"h200": REPO / "docs" / "calibration.md", "h100": REPO / "docs" / "calibration-h100.md"}
SMALL = ("ResNet-4", "gen-n4c512h17w17k32-f4")  # 768 and 110 blocks


@pytest.fixture(params=sorted(REPORTS))
def gpu(request):
    return request.param


def _committed(gpu):
    return json.loads((STUDIES / "calibration" / f"replay_{gpu}.json").read_text())


def test_the_report_is_what_the_committed_replays_say(gpu):
    doc = _committed(gpu)
    assert doc["summary"] == json.loads(json.dumps(replay_summary(doc["rows"])))
    assert doc["summary"]["cases"] == 28
    section = "\n".join(replay_section(doc["rows"]))
    assert section in REPORTS[gpu].read_text()


def test_the_committed_replays_are_what_the_model_gives_today(gpu):
    """Two small cases re-simulated under the committed profile, from the committed sample."""
    sample, times = sample_paths(CALIBRATION_RAW, gpu)
    spec = load_profile(profile_path(gpu)).apply(load_gpu(gpu))
    rows = {r["case"]: r for r in replay_rows(spec, sample, times, only=SMALL)}
    committed = {r["case"]: r for r in _committed(gpu)["rows"]}
    assert set(rows) == set(SMALL)
    for case, row in rows.items():
        assert_close(row, committed[case], rel=1e-9, where=case)


def test_a_gpu_without_its_own_sample_gets_no_replay_section(tmp_path):
    spec = load_profile(profile_path("h200")).apply(load_gpu("h200"))
    assert validate_replay(spec, "h200", tmp_path, tmp_path, print, shown=False) == ([], None)
    assert not (tmp_path / "results").exists()


def test_each_sample_carries_the_untraced_time_of_every_case(gpu):
    """`<gpu>_trace_sample_summary.json` is run_device.py's summary: one row per case of the packed sample."""
    from megasim.app.calibrate.trace_law import load_sample
    sample, times = sample_paths(CALIBRATION_RAW, gpu)
    rows = json.loads(times.read_text())
    meta, _ = load_sample(sample)
    assert sorted(r["case"] for r in rows) == sorted(meta) and len(rows) == 36
    assert all(r["fused_untraced_us"] > 0 and r["p10_us"] <= r["fused_untraced_us"] <= r["p90_us"] for r in rows)
