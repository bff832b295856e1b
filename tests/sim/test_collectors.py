"""The calibration's collectors are the package's own: what they wrote on the H200 reads back like the committed
raw files the fit reads (the trace sample's layout; the builds file's checked rows)."""
import json

import numpy as np

from megasim.app.calibrate.measure import calibrate_measure
from megasim.app.calibrate.raw import MAKERS
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.calibrate.trace_sample_runs import cases

from ..conftest import FIXTURES, REPO

# `measure_trace_sample("h200", OUT, only={"ResNet-2", "ResNet-2-persistent"})` on the lent H200, 2026-11-28.
PACKED = FIXTURES / "h200_trace_sample_2cases_2026-11-28.npz"
COMMITTED = REPO / "scenarios/calibrations/raw/h200_trace_sample.npz"


def test_a_packed_sample_has_the_committed_samples_layout():
    ours, theirs = np.load(PACKED), np.load(COMMITTED)
    keys = [k for k in ours.files if k != "__meta__"]
    assert keys and all(k in theirs.files and ours[k].shape == theirs[k].shape and ours[k].dtype == theirs[k].dtype
                        for k in keys)
    meta, committed = (json.loads(a["__meta__"].tobytes()) for a in (ours, theirs))
    assert set(meta) == {"ResNet-2", "ResNet-2-persistent"}
    assert all(meta[c].keys() == committed[c].keys() for c in meta)
    assert load_sample(PACKED) is not None


def test_the_collectors_cases_are_the_committed_samples():
    assert {c[0] for c in cases("h200")} == set(json.loads(np.load(COMMITTED)["__meta__"].tobytes()))


def test_calibrate_measures_every_raw_file_the_fit_reads():
    import inspect
    parts = inspect.signature(calibrate_measure).parameters["parts"].default
    assert set(parts) == {"hardware", "tasks", "runs", "trace_sample", "kernel_graph", "builds", "tensor_core",
                          "corpus", "corpus_builds"}
    assert {maker for maker, _ in MAKERS.values()} == set(parts) - {"tasks"}


def test_a_partial_raw_folder_names_what_is_missing_and_the_command_that_measures_it(tmp_path, capsys):
    from megasim.app.cli import main
    raw = REPO / "scenarios/calibrations/raw"
    for name in ("h200_micro.json", "h200_runs.json"):
        (tmp_path / name).write_text((raw / name).read_text())
    out = tmp_path / "p.toml"
    assert main(["calibrate", "--gpu", "h200", "--from-raw", "--raw", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lacks h200_trace_resnet2.json, h200_trace_sample.npz" in err
    assert "python -m megasim.app.calibrate.measure --gpu h200 --parts runs,trace_sample" in err and not out.exists()
