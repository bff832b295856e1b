"""docs/paper-reproduction.md is generated from docs/results/paper_trends/paper_trends_v100.json, and today's
code still gives that data: the page cannot drift from the simulator. The simulator is deterministic, so the
numbers must match exactly (up to float formatting), not within a tolerance."""
import json

import pytest

from ..conftest import REPO, STUDIES, load_study

trends = load_study("paper_trends", "paper_trends")
DATA = json.loads((STUDIES / "paper_trends" / "paper_trends_v100.json").read_text())
PAGE = REPO / "docs" / "paper-reproduction.md"


def test_the_page_is_what_the_data_renders():
    assert PAGE.read_text() == trends.render(DATA), \
        "docs/paper-reproduction.md differs from its data: python docs/results/paper_trends/paper_trends.py --replot"


@pytest.mark.parametrize("layer", ["ResNet-2", "ResNet-3"])
def test_today_s_code_gives_a_layer_s_non_fused_and_best_fused_time(layer):
    """Two small layers, recomputed: the non-fused time and the fused time at the recorded best mapping."""
    nonfused = next(n for n in DATA["nonfused"] if n["layer"] == layer)
    assert trends._nonfused_us((layer, DATA["gpu"]))["nonfused_us"] == pytest.approx(nonfused["nonfused_us"], rel=1e-9)
    best = min((r for r in DATA["fused"] if r["layer"] == layer), key=lambda r: r["fused_us"])
    run = trends._fused_us((layer, DATA["gpu"], best["dig"], best["dgo"], best["m"]))
    assert run["fused_us"] == pytest.approx(best["fused_us"], rel=1e-9)
