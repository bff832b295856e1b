"""The session-7 study profile (`sm_sharing = "resident"`, the GEMM from the per-block trace law): the figures
docs/calibration-analysis.md quotes are what its committed predictions say, and the engine still gives them."""
import json
from pathlib import Path

import pytest

from megasim.app.calibrate.corpus_eval import corpus_summary
from megasim.app.calibrate.metrics import summarise
from megasim.app.calibrate.predict import predict_fused, predict_nonfused
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu

from ..conftest import CALIBRATION_RAW

STUDY = Path(__file__).parents[2] / "docs" / "results" / "fidelity_v2"


@pytest.fixture(scope="module")
def paper():
    return json.loads((STUDY / "resident_law_paper_predictions_h200.json").read_text())


def test_quoted_figures_are_the_committed_predictions(paper):
    summary = summarise(paper["rows"])
    assert json.loads(json.dumps(summary)) == paper["summary"]
    assert round(summary["mape"]["heldout"]["fused"] * 100, 1) == 5.0
    assert round(summary["mape"]["heldout"]["nonfused"] * 100, 1) == 4.5
    assert sum(v >= 0.8 for v in summary["spearman"].values()) == 9
    assert max(summary["regret"], key=summary["regret"].get) == "ResNet-1"
    corpus = json.loads((STUDY / "resident_law_corpus_predictions_h200.json").read_text())
    held = corpus_summary(corpus["rows"])["heldout"]
    assert (round(held["fused_mape"] * 100, 1), round(held["nonfused_mape"] * 100, 1)) == (7.5, 6.5)
    assert (held["winner_right"], held["decided_shapes"]) == (26, 29)


def test_the_engine_still_gives_the_study_predictions(paper):
    spec = load_profile(STUDY / "profiles" / "h200_resident_law.toml").apply(load_gpu("h200"))
    assert spec.sm_sharing == "resident" and spec.wait_check_cycles > 0
    runs = json.loads((CALIBRATION_RAW / "h200_runs.json").read_text())["runs"]
    picked = [i for i, r in enumerate(runs) if r["layer"]["name"] == "ResNet-2"][:2]
    for i in picked:
        assert predict_fused(runs[i], spec) == pytest.approx(paper["rows"][i]["pred_fused_us"], rel=1e-6)
    assert predict_nonfused(runs[picked[0]], spec)[0] == pytest.approx(paper["rows"][picked[0]]["pred_nonfused_us"],
                                                                        rel=1e-6)
