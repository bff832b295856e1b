"""Prediction intervals from held-out residuals (megasim.app.calibrate.uncertainty) and how simulate shows them."""
import json

import numpy as np
import pytest

from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.calibrate.uncertainty import Uncertainty, counted, mapping_gain
from megasim.app.cli import main

from ..conftest import STUDIES


DEFAULT_MAPPING = {"dig": 512, "dgo": 512, "m": 4}  # the paper strategy's defaults


def _rows(n=40):
    """Rows as calibrate writes them (calibration_predictions_<gpu>.json), each on the default mapping."""
    rows = []
    for i in range(n):
        err = (i - n / 2) / n * 0.2  # measured / predicted from 0.9 to 1.1
        rows.append({"layer": f"L{i % 8}", "split": "heldout" if i % 2 else "train", "strategy": "paper",
                     "params": DEFAULT_MAPPING, "fused_us": 100 * (1 + err), "pred_fused_us": 100.0,
                     "nonfused_us": 110.0, "pred_nonfused_us": 110.0})
    return rows


def test_intervals_are_the_heldout_percentiles():
    u = Uncertainty.from_rows(_rows())
    assert u.heldout_runs == 20 and u.coverage == 0.9
    assert 0.9 < u.fused_ratio[0] < 0.92 and 1.07 < u.fused_ratio[1] < 1.1
    assert u.nonfused_ratio == (1.0, 1.0)
    assert u.mapping_gain == 1.0  # no run on another mapping than its layer's default: nothing to discount
    assert Uncertainty.from_dict(u.to_dict()) == u
    assert Uncertainty.from_rows(_rows(10)) is None  # 5 held-out runs say too little


def test_mapping_gain_is_the_measured_share_of_predicted_mapping_gains():
    """The slope through the origin of measured on predicted log gain over each layer's default mapping, over
    the runs predicted faster than it; a search counts only that share of a predicted gain."""
    rows = []
    for layer, (pred, meas) in {"A": (90.0, 95.0), "B": (80.0, 90.0)}.items():
        rows += [{"layer": layer, "strategy": "paper", "params": DEFAULT_MAPPING, "pred_fused_us": 100.0,
                  "fused_us": 100.0},
                 {"layer": layer, "strategy": "paper", "params": {**DEFAULT_MAPPING, "m": 1}, "pred_fused_us": pred,
                  "fused_us": meas},
                 # predicted slower than the default: not a predicted gain, not counted
                 {"layer": layer, "strategy": "paper", "params": {**DEFAULT_MAPPING, "m": 2}, "pred_fused_us": 120.0,
                  "fused_us": 80.0}]
    p, m = np.log([0.9, 0.8]), np.log([0.95, 0.9])
    assert mapping_gain(rows) == pytest.approx(p @ m / (p @ p)) and 0.45 < mapping_gain(rows) < 0.5
    assert mapping_gain(rows[:1]) == 1.0  # no gain predicted anywhere: all of it counts
    assert counted(90.0, 100.0, 0.5) == pytest.approx(100 * 0.9 ** 0.5)  # half the log gain
    assert counted(90.0, 100.0, 1.0) == pytest.approx(90.0) and counted(110.0, 100.0, 0.5) == 110.0  # a loss counts


@pytest.mark.parametrize("nonfused,verdict", [(130.0, "fused wins"), (101.0, "too close to call"),
                                              (70.0, "non-fused wins")])
def test_the_call_needs_the_margin_interval_to_exclude_zero(nonfused, verdict):
    u = Uncertainty(fused_ratio=(0.95, 1.05), nonfused_ratio=(0.9, 1.02), margin_error=(-0.08, 0.04))
    call = u.call(100.0, nonfused)
    assert call["call"] == verdict
    assert call["fused_interval_us"] == pytest.approx([95.0, 105.0])
    assert call["margin_interval"] == pytest.approx([nonfused / 100 - 1.08, nonfused / 100 - 0.96])


@pytest.mark.parametrize("gpu", ["h200", "h100"])
def test_committed_profiles_carry_the_intervals_of_their_committed_predictions(gpu):
    rows = json.loads((STUDIES / "calibration" / f"calibration_predictions_{gpu}.json").read_text())["rows"]
    assert load_profile(profile_path(gpu)).uncertainty == json.loads(json.dumps(Uncertainty.from_rows(rows).to_dict()))


def test_simulate_json_carries_the_interval_and_the_call(capsys):
    assert main(["simulate", "--shape", "2,32,20,20,32", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    u = doc["uncertainty"]
    lo, hi = u["fused_interval_us"]
    assert lo < doc["fused_us"] < hi and u["call"] in ("fused wins", "non-fused wins", "too close to call")
    assert main(["simulate", "--shape", "2,32,20,20,32", "--json", "--uncalibrated"]) == 0
    assert json.loads(capsys.readouterr().out)["uncertainty"] is None
