"""What the ranking targets ask of a model (`target_reach`): its error models behave as stated."""
import numpy as np
import pytest

from megasim.app.calibrate.target_reach import margin_reach, ranking_reach, reach_section


def _layer_rows(name, times, errors):
    return [{"layer": name, "fused_us": t, "pred_fused_us": t * (1 + e)} for t, e in zip(times, errors)]


def test_a_ranking_with_spread_out_mappings_survives_small_errors_and_near_ties_do_not():
    spread = np.linspace(100, 200, 13)
    tied = 100 * (1 + np.linspace(0, 0.01, 13))
    rows = _layer_rows("spread", spread, np.zeros(13)) + _layer_rows("tied", tied, np.zeros(13))
    reach = ranking_reach(rows, sds=(0.005, 0.3), draws=200)
    assert reach["expected_layers"]["0.005"] == pytest.approx(1.0, abs=0.05)
    assert reach["expected_layers"]["0.3"] < 0.5
    assert reach["layers"]["spread"]["model_residual_sd"] == pytest.approx(0.0, abs=1e-12)
    assert reach["layers"]["tied"]["best_half_sd"] < 0.005


def test_layers_with_fewer_than_ten_mappings_are_left_out():
    assert ranking_reach(_layer_rows("few", [1.0, 2.0, 3.0], [0, 0, 0]))["layers"] == {}
    assert reach_section(_layer_rows("few", [1.0, 2.0, 3.0], [0, 0, 0])) == []


def test_margin_reach_reads_each_shape_under_its_fastest_measured_mapping():
    rows = []
    for i, (fe, ne) in enumerate([(0.02, -0.02), (-0.02, 0.02), (0.0, 0.0), (0.04, 0.0)]):
        rows.append({"shape": f"s{i}", "fused_us": 100.0, "pred_fused_us": 100 * (1 + fe),
                     "nonfused_us": 110.0, "pred_nonfused_us": 110 * (1 + ne)})
        rows.append({"shape": f"s{i}", "fused_us": 150.0, "pred_fused_us": 999.0,
                     "nonfused_us": 110.0, "pred_nonfused_us": 110 * (1 + ne)})
    m = margin_reach(rows)
    assert m["shapes"] == 4
    assert m["fused_error_sd"] == pytest.approx(np.std([0.02, -0.02, 0.0, 0.04]))
    assert m["needed_sd"] == pytest.approx(0.03 / (1.6449 * np.sqrt(2)), rel=1e-3)
    assert m["error_correlation"] < 0
