"""The generated calibration corpus: what it covers, how it is split, and a measurement run that resumes."""
import json

import pytest

from megasim.app.calibrate.corpus import MAX_GFLOP, buildable, generate, split_of
from megasim.app.calibrate.corpus_runs import done_shapes, measure_corpus
from megasim.contract.errors import MegasimError


@pytest.fixture(scope="module")
def corpus():
    return generate(150)


def test_corpus_is_fixed_distinct_and_buildable(corpus):
    assert [s.layer.name for s in corpus] == [s.layer.name for s in generate(150)]
    assert len({s.layer.name for s in corpus}) == 150
    assert all(buildable(s.layer, s.variant, "h200") for s in corpus[:20])


def test_corpus_covers_the_axes_the_paper_layers_miss(corpus):
    layers = [s.layer for s in corpus]
    assert {1, 256} <= {l.n for l in layers}
    assert any(l.c == 3 for l in layers) and any(l.h != l.w for l in layers) and any(l.c != l.k for l in layers)
    assert any(l.h % s.variant for l, s in zip(layers, corpus))  # ragged tiles
    assert {s.variant for s in corpus} == {2, 4, 6}
    assert min(l.c for l in layers) == 3 and max(l.k for l in layers) >= 768


def test_split_is_by_shape_and_holds_out_about_a_third(corpus):
    held = [s for s in corpus if s.split == "heldout"]
    assert 0.2 <= len(held) / len(corpus) <= 0.4
    assert all(s.split == split_of(s.layer.name) for s in corpus)


def test_a_run_appends_a_line_per_shape_and_a_rerun_resumes(tmp_path):
    path = tmp_path / "corpus.jsonl"
    seen = []

    def fake(shape):
        seen.append(shape.layer.name)
        if len(seen) == 2:
            raise MegasimError("a kernel refused")
        return {"shape": shape.layer.name, "split": shape.split, "runs": [{"fused_us": 1.0}]}

    first = measure_corpus("h200", path, count=4, measure=fake)
    assert first == {"shapes": 4, "already": 0, "measured": 4, "left": 0, "failed": [first["failed"][0]]}
    assert "a kernel refused" in first["failed"][0]
    with path.open("a") as f:
        f.write('{"shape": "torn')  # an interrupted write
    again = measure_corpus("h200", path, count=6, measure=fake)
    assert again["already"] == 4 and again["measured"] == 2 and len(seen) == 6
    assert len(done_shapes(path)) == 6
    assert all(json.loads(line)["shape"] for line in path.read_text().splitlines()[-2:])


def test_bad_count_or_budget_is_refused(tmp_path):
    with pytest.raises(MegasimError, match="positive"):
        measure_corpus("h200", tmp_path / "c.jsonl", count=0, measure=lambda s: {})
