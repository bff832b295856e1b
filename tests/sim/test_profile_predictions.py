"""The committed profiles predict, bit for bit, what they predicted before the model's laws were reorganised.

`tests/fixtures/profile_predictions.json` holds what `megasim simulate --layer L --gpu G --mode M --json` printed
at commit 07dc169 (2026-11-27) for ResNet-2 and YOLOv3-5 in each scheduling mode, on the calibrated H200 and H100
(their committed profiles) and the A100's datasheet spec, and at b2919cd (2026-11-27) for ResNet-1 and ResNet-4 on
the H200 and two runs on the V100's datasheet spec: fused and non-fused, every mode, both calibrated GPUs, the
datasheet path. This is what an engine rewrite must keep (the recorded predictions it was once held to ran a
frozen profile of laws since retired). A change that only moves code (a law to its own file,
a constant to another object, a dead law deleted) must leave every one of them exactly equal: the model is
chaotic at the scale of one float's last bit (`megasim.engine.core`), so "equal within noise" would hide a
changed law. `python -m tests.sim.test_profile_predictions` re-records them after a deliberate model change:
the H200's two ready-queue runs were re-recorded on 2026-11-28, when its profile took the `queue_pop` law (every
other run held bit for bit across the hardware/model split and the warp body's laws).
"""
import contextlib
import io
import json

import pytest

from megasim.app.cli import main as cli_main

from ..conftest import FIXTURES

RECORDED = FIXTURES / "profile_predictions.json"


def predict(layer: str, gpu: str, mode: str) -> dict:
    """`megasim simulate --layer LAYER --gpu GPU --mode MODE --json`, in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli_main(["simulate", "--layer", layer, "--gpu", gpu, "--mode", mode, "--json"])
    assert rc in (0, None), f"megasim simulate --layer {layer} --gpu {gpu} --mode {mode} exited {rc}"
    run = json.loads(out.getvalue())
    return {"layer": layer, "gpu": gpu, "mode": mode, "num_tbs": run["num_tbs"], "fused_us": run["fused_us"],
            "nonfused_us": run["nonfused_us"]}


@pytest.mark.parametrize("recorded", json.loads(RECORDED.read_text())["runs"],
                         ids=lambda r: f"{r['layer']}-{r['gpu']}-{r['mode']}")
def test_prediction_is_bit_for_bit_the_recorded_one(recorded):
    assert predict(recorded["layer"], recorded["gpu"], recorded["mode"]) == recorded


if __name__ == "__main__":
    doc = json.loads(RECORDED.read_text())
    doc["runs"] = [predict(r["layer"], r["gpu"], r["mode"]) for r in doc["runs"]]
    RECORDED.write_text(json.dumps(doc, indent=1) + "\n")
