"""Calibration's stage 5: the `tensor_core_gemm` law fitted on `<gpu>_tensor_core.json`, held-out layers judging it;
no file, no law. (Bad files: `test_bad_input_calibration.py`.)"""
import json

import pytest

from megasim.app.calibrate.gpu_runs import HELDOUT_LAYERS
from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.calibrate.raw import raw_paths
from megasim.app.calibrate.tensor_law import (LAW, _predict, fit_tensor_law, load_tensor_core, tensor_stage,
                                              with_law)
from megasim.app.catalog import load_layer, partition_for
from megasim.contract.resources import warp_partition

from ..conftest import CALIBRATION_RAW

COMMITTED = CALIBRATION_RAW / "h200_tensor_core.json"
GENERIC = {"tiles_per_group": 32, "gemm_mats_per_task": 4, "threads": 256}  # a partition the warp body cannot tile


def fp32_model():
    """The committed H200 profile's model without the law: what stage 5 fits over."""
    profile = load_profile(profile_path("h200"))
    gpu = profile.apply(profile.base_spec())
    return gpu.with_model(laws=[x.name for x in gpu.model.laws if x.name != LAW])


def synthetic(path, spec, layers, efficiency: float, fused: float, latency: float):
    """A raw file whose 3xTF32 times are what the law at these constants predicts (FP32 times: its FP32), each
    layer at its H200 partition widened for the warp body, as measure.py times it."""
    law = with_law(spec, efficiency, fused, latency)
    rows = []
    for name in layers:
        layer = load_layer(name)
        row = {"layer": name, "variant": 4, "partition": warp_partition(layer, partition_for(layer, "h200")).to_dict()}
        rows.append({**row, **{p: {f"{k}_us": _predict((law, row, p, k)) for k in ("gemm", "nonfused", "fused")}
                               for p in ("fp32", "3xtf32")}})
    path.write_text(json.dumps({"header": {"device": "NVIDIA H200"}, "rows": rows}))
    return path


def test_the_fit_finds_the_constants_that_made_the_times(tmp_path):
    spec = fp32_model()
    path = synthetic(tmp_path / "h200_tensor_core.json", spec, ["resnet-2", "resnet-4", "resnet-3"], 0.6, 0.45, 0.8)
    rows = load_tensor_core(path)
    assert [r["split"] for r in rows] == ["train", "train", "heldout"]
    model, errors, judged = fit_tensor_law(rows, spec, log=lambda *_: None)
    assert model[LAW] == {"efficiency_ratio": 0.6, "fused_efficiency_ratio": 0.45, "latency_ratio": 0.8}
    assert model["laws"] == [x.name for x in spec.model.laws] + [LAW]
    assert errors == {"gemm_gain": 0.0, "fused_gain": 0.0, "heldout_gemm": 0.0, "heldout_nonfused": 0.0,
                      "heldout_fused": 0.0}
    assert all(r[k]["within_5_points"] for r in judged for k in ("gemm", "nonfused", "fused"))


def test_the_committed_raw_file_is_split_as_the_calibration_runs_are():
    rows = load_tensor_core(COMMITTED)
    held = {load_layer(r["layer"]).name for r in rows if r["split"] == "heldout"}
    assert held == set(HELDOUT_LAYERS)
    assert sorted(r["variant"] for r in rows if r["split"] == "train") == [2] * 9 + [4] * 9 + [6] * 9


def test_the_committed_h200_profile_carries_the_fitted_law_and_its_held_out_error():
    """What `calibrate --gpu h200 --from-raw` writes from the committed raw file (the full refit reproduces it)."""
    profile = load_profile(profile_path("h200"))
    assert profile.model["laws"][-1] == LAW
    law = profile.model[LAW]
    assert 0.3 <= law["fused_efficiency_ratio"] <= law["efficiency_ratio"] <= 1.0
    record = profile.fit["stage5_mean_abs_log_error"]
    assert set(record) == {"gemm_gain", "fused_gain", "heldout_gemm", "heldout_nonfused", "heldout_fused"}
    assert all(0 <= v < 0.1 for v in record.values())
    assert "scenarios/calibrations/raw/h200_tensor_core.json" in profile.provenance["measurements"]
    spec = profile.apply(profile.base_spec())
    assert spec.model.law("gemm_precision").efficiency_ratio == law["efficiency_ratio"]
    assert spec.model.law("gemm_precision").latency_ratio == law["latency_ratio"] < 1.0


def test_no_raw_file_no_law():
    """The H100 has no 3xTF32 measurement: its raw folder has no file, its profile no law, and an empty stage
    adds nothing."""
    assert not raw_paths(CALIBRATION_RAW, "h100")["tensor_core"].exists()
    assert LAW not in load_profile(profile_path("h100")).model["laws"]
    assert tensor_stage([], fp32_model()) == ({}, {})


@pytest.mark.parametrize("edit, said", [
    (lambda d: d["rows"][0].pop("3xtf32"), "rows[0]: 3xtf32 is missing"),
    (lambda d: d["rows"][0].update({"3xtf32": 5}), "rows[0]: 3xtf32 should be a dictionary"),
    (lambda d: d["rows"][0]["partition"].update(GENERIC), "rows[0]: ResNet-1: the warp-tiled GEMM body does not tile"),
    (lambda d: d["rows"][0]["partition"].update(threads=100), "rows[0]: "),
    (lambda d: d["rows"][0]["partition"].update(tiles=8), "rows[0]: partition: unknown field(s) ['tiles']"),
    (lambda d: d["rows"][1]["fp32"].update(gemm_us=0), "rows[1]: fp32.gemm_us should be greater than 0"),
    (lambda d: d["rows"][0].update(layer="resnet-9"), "rows[0]: unknown layer 'resnet-9'"),
    (lambda d: d["rows"][0].update(variant=3), "rows[0]: variant"),
    (lambda d: d.update(rows=[r for r in d["rows"] if r["layer"] == "vgg-2"]), "every row is held out"),
    (lambda d: d.update(rows={}), "not a 3xTF32 measurement"),
])
def test_a_bad_raw_file_is_one_line(tmp_path, edit, said):
    from megasim.contract.errors import MegasimError
    doc = json.loads(COMMITTED.read_text())
    edit(doc)
    path = tmp_path / "h200_tensor_core.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(MegasimError) as err:
        load_tensor_core(path)
    assert said in str(err.value) and "\n" not in str(err.value) and str(path) in str(err.value)
