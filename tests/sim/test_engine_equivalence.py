"""The engine predicts what it predicted before its hot path was rewritten for speed
(2026-11-23, from commit 4aab740).

`docs/results/engine_speed/equivalence.json` holds `megasim simulate --json`'s fused and non-fused time for
the 13 paper layers on h200 (calibrated) and v100 (datasheet), recorded before the rewrite. CI re-runs a
sample that covers every layer at least once and both GPUs, about 160,000 thread blocks; VGG-1, VGG-2,
YOLOv3-1 and YOLOv3-2 run on v100 only, where their grids are smallest.
`python docs/results/engine_speed/equivalence.py --check` re-runs all 26.
"""
import json

import pytest

from ..conftest import STUDIES, load_study

equivalence = load_study("engine_speed", "equivalence")
RECORDED = json.loads((STUDIES / "engine_speed" / "equivalence.json").read_text())
BIG = {"vgg-1", "vgg-2", "yolov3-1", "yolov3-2"}
SAMPLE = [r for r in RECORDED["runs"] if (r["layer"] in BIG) == (r["gpu"] == "v100")
          or r["layer"] in {"resnet-2", "resnet-4", "yolov3-5"}]


@pytest.mark.parametrize("recorded", SAMPLE, ids=lambda r: f"{r['layer']}-{r['gpu']}")
def test_prediction_unchanged(recorded):
    now = equivalence.predict(recorded["layer"], recorded["gpu"])
    assert now["num_tbs"] == recorded["num_tbs"]
    for key in ("fused_us", "nonfused_us"):
        assert now[key] == pytest.approx(recorded[key], rel=RECORDED["tolerance"]), key
