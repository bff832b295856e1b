"""Where `calibrate` and `validate` write: under ./out by default, never into the installed package; a profile
just fitted does not call itself stale; and the one documented command rewrites every section of the committed
calibration report."""
import json

import pytest

from megasim.app.calibrate.profile import CalibrationProfile, load_profile, profile_path
from megasim.app.calibrate.raw import COMMITTED_RAW, calibrate_defaults
from megasim.app.cli import build_parser, main

from ..conftest import CALIBRATION_RAW, REPO, STUDIES

PREDICTIONS = STUDIES / "calibration" / "calibration_predictions_h200.json"


def _defaults(*argv):
    args = build_parser().parse_args(["calibrate", *argv])
    calibrate_defaults(args)
    return args.raw, args.out


def test_calibrate_writes_under_out_and_fits_from_raw_on_the_committed_files():
    assert _defaults() == ("out/calibrate/raw", "out/calibrate/h200.toml")
    assert _defaults("--gpu", "H100") == ("out/calibrate/raw", "out/calibrate/h100.toml")
    assert _defaults("--from-raw") == (str(COMMITTED_RAW), "out/calibrate/h200.toml")
    assert _defaults("--from-raw", "--raw", "mine", "--out", "p.toml") == ("mine", "p.toml")
    assert _defaults("--corpus", "5") == ("out/calibrate/raw", None)


@pytest.fixture
def quick_fit(monkeypatch):
    """Stages 2 to 5 answer at once with the committed profile's values: the files, paths and printout around
    them are what is tested, not the minutes of fitting."""
    from megasim.app.calibrate.tensor_law import LAW
    committed = load_profile(profile_path("h200"))
    model = committed.model
    stage2 = {**model["compute_efficiency"], **{k: model[k] for k in
                                                ("dram_access_efficiency", "step_cycles", "block_fixed_cycles")}}
    fused = {k: model[k] for k in ("task_overhead_cycles", "l2_usable_fraction")}
    monkeypatch.setattr("megasim.app.calibrate.run.fit_compute_efficiency", lambda *a, **k: (dict(stage2), 0.1))
    monkeypatch.setattr("megasim.app.calibrate.run.fit_fused", lambda *a, **k: (fused, 0.01))
    whole = {"laws": [x for x in model["laws"] if x != LAW], **{k: model[k] for k in ("gemm_body_laws", "queue_pop")}}
    monkeypatch.setattr("megasim.app.calibrate.run.fit_builds", lambda *a, **k: (whole, {}))
    tensor = {"laws": model["laws"], LAW: model[LAW]}
    monkeypatch.setattr("megasim.app.calibrate.tensor_law.fit_tensor_law",
                        lambda *a, **k: (tensor, committed.fit["stage5_mean_abs_log_error"], []))


@pytest.mark.slow
def test_calibrate_from_raw_writes_a_fresh_profile_under_out_and_says_how_to_use_it(tmp_path, monkeypatch,
                                                                                    capsys, quick_fit):
    committed = profile_path("h200").read_bytes()
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--gpu", "h200", "--from-raw"]) == 0
    out = capsys.readouterr().out
    written = tmp_path / "out" / "calibrate" / "h200.toml"
    assert written.is_file() and sorted(p.name for p in tmp_path.rglob("*")) == ["calibrate", "h200.toml", "out"]
    assert "wrote out/calibrate/h200.toml" in out and "--profile out/calibrate/h200.toml" in out
    assert "megasim validate --gpu h200 --profile out/calibrate/h200.toml\n" in out and "[uncertainty]" in out
    assert profile_path("h200").read_bytes() == committed
    fresh = load_profile(written)
    assert fresh.stale() is None
    assert fresh.provenance["measurements"][0] == "scenarios/calibrations/raw/h200_micro.json"
    assert main(["simulate", "--profile", str(written), "--shape", "2,32,20,20,32"]) == 0
    printed = capsys.readouterr().out
    assert "calibrated profile" in printed and "WARNING" not in printed and "stale" not in printed


def test_a_profile_fitted_on_the_committed_measurements_carries_their_revalidation(tmp_path):
    """The committed runs were measured on an older kernel build and re-validated on today's: a fit on them,
    wherever it is written, is as current as the committed profile."""
    from megasim.app.calibrate.run import _provenance
    header = json.loads((CALIBRATION_RAW / "h200_runs.json").read_text())["header"]
    prov = _provenance([CALIBRATION_RAW / "h200_runs.json"], header, tmp_path / "new.toml", "h200")
    assert prov["revalidated_builds"] == load_profile(profile_path("h200")).provenance["revalidated_builds"]
    assert CalibrationProfile("h200", model=load_profile(profile_path("h200")).model, provenance=prov).stale() is None


def _validate(tmp_path, monkeypatch, capsys, profile, scale=1.0):
    """`validate` on the committed runs with the committed predictions (scaled) in place of minutes of simulating."""
    rows = json.loads(PREDICTIONS.read_text())["rows"]
    rows = [{**r, "pred_fused_us": r["pred_fused_us"] * scale} for r in rows]
    monkeypatch.setattr("megasim.app.calibrate.run.predict_runs", lambda runs, spec, jobs, shown=True: rows)
    monkeypatch.setattr("megasim.app.calibrate.run.validate_replay", lambda *a, **k: ([], None))
    monkeypatch.setattr("megasim.app.calibrate.run.validate_builds", lambda *a, **k: [])
    rc = main(["validate", "--profile", str(profile), "--measurements", str(CALIBRATION_RAW / "h200_runs.json"),
               "--out", str(tmp_path / "v"), "--no-corpus"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def test_validate_leaves_the_committed_profile_alone(tmp_path, monkeypatch, capsys):
    """Intervals that differ from the committed profile's are reported, not written into package data."""
    committed = profile_path("h200").read_bytes()
    out = _validate(tmp_path, monkeypatch, capsys, profile_path("h200"), scale=1.1)
    assert profile_path("h200").read_bytes() == committed
    assert "left as they are" in out and "--out docs" in out


def test_validate_records_the_intervals_in_a_profile_of_ones_own(tmp_path, monkeypatch, capsys):
    mine = tmp_path / "p.toml"
    mine.write_text(profile_path("h200").read_text())
    out = _validate(tmp_path, monkeypatch, capsys, mine, scale=1.1)
    assert "recorded the held-out 90% intervals" in out
    assert load_profile(mine).uncertainty != load_profile(profile_path("h200")).uncertainty


def test_validate_predicts_the_corpus_by_default():
    assert build_parser().parse_args(["validate", "--gpu", "h200"]).corpus is True
    assert build_parser().parse_args(["validate", "--gpu", "h200", "--no-corpus"]).corpus is False


@pytest.mark.parametrize("gpu, report", [("h200", "calibration.md"), ("h100", "calibration-h100.md")])
def test_the_documented_regeneration_command_is_the_one_the_report_names(gpu, report):
    """The README's command for each committed report is the report's own Reproduce line, and that report holds
    every section, the held-out corpus included."""
    command = f"megasim validate --gpu {gpu} --out docs" + ("" if gpu == "h200" else f" --report docs/{report}")
    text = (REPO / "docs" / report).read_text()
    assert f"Reproduce on any CPU: `{command}`." in text
    assert command in (REPO / "README.md").read_text()
    for section in ("## Held-out corpus shapes", "## Replaying measured placements", "## Prediction intervals",
                    "## The fitted profile"):
        assert section in text


@pytest.mark.slow
def test_a_gpu_without_a_spec_gets_one_written_from_the_device_and_its_profile_beside_it(tmp_path, monkeypatch,
                                                                                         capsys, quick_fit):
    """`calibrate --gpu NAME` for a GPU megasim has no spec of: here every raw file is already measured (the
    committed H200 ones under the new name, the micro-benchmarks with the device's reported properties), so
    nothing is measured; the spec is written from them, the fit runs over it, and `simulate --gpu <spec>` finds
    the profile beside it."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for path in CALIBRATION_RAW.glob("h200_*"):
        (raw / path.name.replace("h200_", "newgpu_", 1)).write_bytes(path.read_bytes())
    micro = json.loads((CALIBRATION_RAW / "h200_micro.json").read_text())
    micro["header"] |= json.loads((REPO / "tests/fixtures/h200_micro_2026-11-28.json").read_text())["header"]
    (raw / "newgpu_micro.json").write_text(json.dumps(micro))
    held = {"mape": {"heldout": {"fused": 0.044, "nonfused": 0.025}}, "corpus": {"fused_mape": 0.06,
                                                                                   "nonfused_mape": 0.04}}
    monkeypatch.setattr("megasim.app.calibrate.run.validate_profile", lambda *a, **k: held)
    # the committed H200 folder has no <gpu>_corpus_builds.json (validation data, no fit reads it)
    monkeypatch.setattr("megasim.app.calibrate.builds_runs.measure_corpus_builds", lambda *a, **k: {"left": 0})
    out = tmp_path / "newgpu.toml"
    assert main(["calibrate", "--gpu", "newgpu", "--raw", str(raw), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    spec = tmp_path / "gpus" / "newgpu.toml"
    assert f"wrote {spec}, the spec of newgpu" in printed and f"megasim simulate --gpu {spec}" in printed
    assert "held-out MAPE: paper layers' runs: fused 4.4%, non-fused 2.5%" in printed
    assert "measured on NVIDIA H200" in spec.read_text()
    profile = load_profile(out)
    assert profile.gpu == "newgpu" and out.read_text().count('spec = "gpus/newgpu.toml"') == 1
    assert profile.base_spec().sm_count == 132
    assert main(["simulate", "--gpu", str(spec), "--shape", "2,32,20,20,32"]) == 0
    assert f"calibrated profile {out}" in capsys.readouterr().out
    moved = tmp_path / "elsewhere" / "gpus"
    moved.mkdir(parents=True)
    (moved / "newgpu.toml").write_bytes(spec.read_bytes())
    assert main(["simulate", "--gpu", str(moved / "newgpu.toml"), "--shape", "2,32,20,20,32"]) == 0
    assert "datasheet spec" in capsys.readouterr().out


@pytest.mark.parametrize("budget", [[], ["--budget-s", "5"]], ids=["no-budget", "budget"])
def test_a_calibration_with_parts_left_says_so_and_fits_nothing(tmp_path, monkeypatch, capsys, budget):
    monkeypatch.setattr("megasim.app.calibrate.measure.calibrate_measure",
                        lambda *a, **k: {"hardware": "done", "runs": "done", "trace_sample": "left"})
    out = tmp_path / "p.toml"
    assert main(["calibrate", "--gpu", "h200", "--raw", str(tmp_path / "raw"), "--out", str(out), *budget]) == 0
    printed = capsys.readouterr().out
    assert "trace_sample left" in printed and "run the same command again" in printed and not out.exists()
    assert ("--budget-s 5 ran out" if budget else "unfinished") in printed


@pytest.mark.slow
def test_the_3xtf32_law_is_fitted_where_its_raw_file_is_and_nowhere_else(tmp_path, quick_fit):
    """Stage 5 runs on `<gpu>_tensor_core.json` and adds the law, its error and the file to the profile; a raw
    folder without the file (the H100's) gives a profile without the law, so its searches stay FP32."""
    from megasim.app.calibrate.run import fit_profile
    from megasim.app.calibrate.tensor_law import LAW
    raw = tmp_path / "raw"
    raw.mkdir()
    for path in CALIBRATION_RAW.glob("h200_*"):
        (raw / path.name).symlink_to(path)
    committed = load_profile(profile_path("h200"))
    fitted = fit_profile("h200", raw, tmp_path / "with.toml", log=lambda *_: None)
    assert fitted.model["laws"] == committed.model["laws"] and fitted.model[LAW] == committed.model[LAW]
    assert fitted.fit["stage5_mean_abs_log_error"] == committed.fit["stage5_mean_abs_log_error"]
    assert str(raw / "h200_tensor_core.json") in fitted.provenance["measurements"]
    (raw / "h200_tensor_core.json").unlink()
    bare = fit_profile("h200", raw, tmp_path / "without.toml", log=lambda *_: None)
    assert LAW not in bare.model and LAW not in bare.model["laws"] and "stage5_mean_abs_log_error" not in bare.fit
    assert not any("tensor_core" in m for m in bare.provenance["measurements"])
    assert load_profile(tmp_path / "without.toml").apply(committed.base_spec()).model.law("gemm_precision") is None
