"""The committed calibration: its report is what the data says, and a model change cannot slip past it.

Figures are recomputed from the committed predictions (docs/results/calibration_predictions_h200.json,
written by `megasim validate`); a few runs are re-simulated to check those predictions are still what
the model gives under the committed profile.
"""
import json
from pathlib import Path

import pytest

from sim.calibrate.metrics import summarise
from sim.calibrate.predict import predict_fused
from sim.calibrate.profile import load_profile, profile_path
from sim.spec import load_gpu

ROOT = Path(__file__).resolve().parents[2]
PREDICTIONS = ROOT / "docs" / "results" / "calibration_predictions_h200.json"
RUNS = ROOT / "scenarios" / "calibrations" / "raw" / "h200_runs.json"


@pytest.fixture(scope="module")
def committed():
    return json.loads(PREDICTIONS.read_text())


@pytest.fixture(scope="module")
def summary(committed):
    return summarise(committed["rows"])


def test_report_matches_its_data(committed, summary):
    assert json.loads(json.dumps(summary)) == committed["summary"]
    assert len(committed["rows"]) == len(json.loads(RUNS.read_text())["runs"])


def test_heldout_mape_within_ten_percent(summary):
    held = summary["mape"]["heldout"]
    assert held["runs"] >= 60
    assert held["fused"] <= 0.10
    assert held["nonfused"] <= 0.10


def test_profile_is_for_the_kernels_in_this_checkout():
    assert load_profile(profile_path("h200")).stale() is None


def test_predictions_are_what_the_model_gives_today(committed):
    profile = load_profile(profile_path("h200"))
    spec = profile.apply(load_gpu("h200"))
    runs = json.loads(RUNS.read_text())["runs"]
    small = [i for i, r in enumerate(runs) if r["layer"]["name"] in ("ResNet-2", "YOLOv3-4")][:4]
    for i in small:
        assert predict_fused(runs[i], spec) == pytest.approx(committed["rows"][i]["pred_fused_us"], rel=1e-6)


def test_no_regression_below_the_committed_ranking_and_winner_calls(summary):
    """Floors at what the committed profile reaches (7 of 13 each), below the targets that follow."""
    assert sum(v >= 0.8 for v in summary["spearman"].values()) >= 7
    assert sum(w["right"] for w in summary["winner"].values()) >= 7
    assert max(summary["regret"].values()) <= 0.02


@pytest.mark.xfail(strict=True, reason="issue 4 target not met yet: see docs/calibration-analysis.md")
def test_spearman_at_least_0_8_within_every_layer(summary):
    assert all(v >= 0.8 for v in summary["spearman"].values())


@pytest.mark.xfail(strict=True, reason="issue 4 target not met yet: see docs/calibration-analysis.md")
def test_winner_called_right_on_all_13_layers(summary):
    assert all(w["right"] for w in summary["winner"].values())


H100_PREDICTIONS = ROOT / "docs" / "results" / "calibration_predictions_h100.json"


def test_h100_profile_holds_on_its_held_out_data():
    """The H100 profile (same model, its own measurements): the data behind docs/calibration-h100.md."""
    committed = json.loads(H100_PREDICTIONS.read_text())
    summary = summarise(committed["rows"])
    assert json.loads(json.dumps(summary)) == committed["summary"]
    assert load_profile(profile_path("h100")).stale() is None
    held = summary["mape"]["heldout"]
    assert held["runs"] >= 60 and held["fused"] <= 0.10 and held["nonfused"] <= 0.10
    # floors at what the committed profile reaches (4 and 9 of 13, 3.9%), below the targets
    assert sum(v >= 0.8 for v in summary["spearman"].values()) >= 4
    assert sum(w["right"] for w in summary["winner"].values()) >= 9
    assert max(summary["regret"].values()) <= 0.04
