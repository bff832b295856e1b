"""The committed calibration: its report is what the data says, and a model change cannot slip past it.

Figures are recomputed from the committed predictions (docs/results/calibration/calibration_predictions_<gpu>.json,
written by `megasim validate`, for the H200 and the H100); a few runs are re-simulated to check those predictions are still what
the model gives under the committed profile.
"""
import json

import pytest

from megasim.app.calibrate.metrics import decided_winners, summarise
from megasim.app.calibrate.predict import predict_fused
from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.catalog import load_gpu

from ..conftest import CALIBRATION_RAW, STUDIES

PREDICTIONS = STUDIES / "calibration"
# Floors at what each committed profile reaches, below the fidelity targets (which follow, for the H200):
# layers with Spearman >= 0.8, winners called right, worst regret of the simulator's pick. The H200's were
# raised when its resident-form profile reached 9 and 11, the H100's when its resident-form profile reached
# 7 and 11 (2026-11-25; docs/decisions.md, "The rule for adopting a model change").
FLOORS = {"h200": (9, 11, 0.02), "h100": (7, 11, 0.04)}
# Held-out corpus ceilings and floor: fused MAPE, non-fused MAPE, winners right where the margin exceeds 3%.
CORPUS_FLOORS = {"h200": (0.065, 0.055, 27), "h100": (0.07, 0.055, 28)}


@pytest.fixture(scope="module", params=sorted(FLOORS))
def gpu(request):
    return request.param


@pytest.fixture(scope="module")
def committed(gpu):
    return json.loads((PREDICTIONS / f"calibration_predictions_{gpu}.json").read_text())


@pytest.fixture(scope="module")
def summary(committed):
    return summarise(committed["rows"])


def _runs(gpu):
    return json.loads((CALIBRATION_RAW / f"{gpu}_runs.json").read_text())["runs"]


def test_report_matches_its_data(gpu, committed, summary):
    assert json.loads(json.dumps(summary)) == committed["summary"]
    assert len(committed["rows"]) == len(_runs(gpu))


def test_heldout_mape_within_ten_percent(summary):
    held = summary["mape"]["heldout"]
    assert held["runs"] >= 60
    assert held["fused"] <= 0.10
    assert held["nonfused"] <= 0.10


# The H100's profile was fitted on 2026-11-25, before three of the laws calibration now fits; until it is refitted
# (`megasim calibrate --gpu h100` on an H100, docs/results/calibrate_h100) it must say so wherever it is loaded.
FITTED_BEFORE = {"h100": "first_wave_stagger, queue_pop, tensor_core_gemm"}


def test_profile_is_for_the_kernels_and_the_laws_in_this_checkout(gpu):
    stale = load_profile(profile_path(gpu)).stale()
    if gpu in FITTED_BEFORE:
        assert f"profile fitted before the laws {FITTED_BEFORE[gpu]}" in stale
    else:
        assert stale is None


def test_predictions_are_what_the_model_gives_today(gpu, committed):
    profile = load_profile(profile_path(gpu))
    spec = profile.apply(load_gpu(gpu))
    runs = _runs(gpu)
    small = [i for i, r in enumerate(runs) if r["layer"]["name"] in ("ResNet-2", "YOLOv3-4")][:4]
    for i in small:
        assert predict_fused(runs[i], spec) == pytest.approx(committed["rows"][i]["pred_fused_us"], rel=1e-6)


def test_no_regression_below_the_committed_ranking_and_winner_calls(gpu, summary):
    ranked, winners, regret = FLOORS[gpu]
    assert sum(v >= 0.8 for v in summary["spearman"].values()) >= ranked
    assert sum(w["right"] for w in summary["winner"].values()) >= winners
    assert max(summary["regret"].values()) <= regret


def test_every_paper_layer_with_a_decided_margin_is_called_right(gpu, committed, summary):
    """Where the measured margin under the pick exceeds 3% (8 H200 layers, 9 H100 ones), every call is right: a
    change may trade the near-ties, which are inside the model's per-run error, but not these (floor added 2026-11-27)."""
    right, decided = decided_winners(committed["rows"], summary)
    assert decided >= 8 and right == decided


@pytest.fixture(scope="module")
def h200_summary():
    return summarise(json.loads((PREDICTIONS / "calibration_predictions_h200.json").read_text())["rows"])


@pytest.mark.xfail(strict=True, reason="fidelity target not met yet: see docs/decisions.md, \"Where the H200 profile stands\"")
def test_spearman_at_least_0_8_within_every_layer(h200_summary):
    assert all(v >= 0.8 for v in h200_summary["spearman"].values())


@pytest.mark.xfail(strict=True, reason="fidelity target not met yet: see docs/decisions.md, \"Where the H200 profile stands\"")
def test_winner_called_right_on_all_13_layers(h200_summary):
    assert all(w["right"] for w in h200_summary["winner"].values())


def test_corpus_report_matches_its_data(gpu):
    """The held-out corpus figures in the report are what the committed corpus predictions say."""
    from megasim.app.calibrate.corpus_eval import corpus_summary
    doc = json.loads((PREDICTIONS / f"corpus_predictions_{gpu}.json").read_text())
    assert json.loads(json.dumps(corpus_summary(doc["rows"]))) == json.loads(json.dumps(doc["summary"]))
    assert doc["summary"]["heldout"]["shapes"] == 46


def test_no_regression_on_the_heldout_corpus(gpu):
    """What the committed profile reaches on the 46 held-out corpus shapes, which no fit sees: recomputed from
    the predicted and measured times, not read from the file's summary."""
    from megasim.app.calibrate.corpus_eval import corpus_summary
    rows = json.loads((PREDICTIONS / f"corpus_predictions_{gpu}.json").read_text())["rows"]
    held = corpus_summary(rows)["heldout"]
    fused, nonfused, winners = CORPUS_FLOORS[gpu]
    assert held["fused_mape"] <= fused and held["nonfused_mape"] <= nonfused
    assert held["winner_right"] >= winners


REPORTS = {"h200": "calibration.md", "h100": "calibration-h100.md"}


def test_target_reach_section_is_what_the_committed_data_says(gpu, committed):
    """The report's account of what the ranking targets ask is recomputed from the committed predictions."""
    from megasim.app.calibrate.target_reach import reach_section
    corpus = json.loads((PREDICTIONS / f"corpus_predictions_{gpu}.json").read_text())["rows"]
    report = (STUDIES.parent / REPORTS[gpu]).read_text()
    assert "\n".join(reach_section(committed["rows"], corpus)) in report
