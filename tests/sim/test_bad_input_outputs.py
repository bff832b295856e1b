"""Bad input, outputs and flags: each bad case is one line on stderr, exit code 2, no traceback and nothing left
behind; each flag that used to be ignored is either applied or refused. Adding a case is one line.

The CLI runs in-process (`main(argv)`). Paths in a case are templates: {tmp} is the test's folder, holding
`file` (a regular file), `fifo` (a FIFO) and `mapping.json` (a mapping whose partition is not the
partition table's, as a search writes). Device nodes are only ever named, never written: the check that
refuses them runs before any write, and each case asserts they are still devices afterwards.
"""
import json
import os
from dataclasses import replace
import stat
import sys

import pytest

from megasim.app.catalog import partition_for
from megasim.app.cli import build_parser, main
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import save_mapping
from megasim.contract.problem import Layer

from ..conftest import CALIBRATION_RAW, REPO

SMALL = ["--shape", "2,32,20,20,32"]
SEARCH = ["search", "--shape", "2,32,20,20,64", "--quiet", "--jobs", "1", "--budget", "2"]
MAP = ["simulate", "--mapping", "{tmp}/mapping.json"]
H100_PROFILE = str(REPO / "scenarios" / "calibrations" / "h100.toml")
H200_RUNS = str(CALIBRATION_RAW / "h200_runs.json")
DEVICES = ("/dev/null", "/dev/full")

ERRORS = [
    ("trace-under-a-file", ["simulate", *SMALL, "--trace", "{tmp}/file/t.json"], "file is a file, not a folder"),
    ("trace-deep-under-a-file", ["simulate", *SMALL, "--trace", "{tmp}/file/a/b/t.json"], "is a file, not a folder"),
    ("trace-dev-null", ["simulate", *SMALL, "--trace", "/dev/null"], "/dev/null: is a character device"),
    ("trace-dev-full", ["simulate", *SMALL, "--trace", "/dev/full"], "/dev/full: is a character device"),
    ("trace-fifo", ["simulate", *SMALL, "--trace", "{tmp}/fifo"], "is a FIFO"),
    ("trace-is-a-folder", ["simulate", *SMALL, "--trace", "{tmp}"], "is a folder, not a file"),
    ("trace-in-proc", ["simulate", *SMALL, "--trace", "/proc/megasim-test/t.json"], "/proc/megasim-test/t.json:"),
    ("ok-trace-bad-plot", ["simulate", *SMALL, "--trace", "{tmp}/ok.json", "--plot", "{tmp}/file/p.png"], "is a file"),
    ("plot-jpg", ["simulate", *SMALL, "--plot", "{tmp}/t.jpg"], "use .png, .pdf or .svg"),
    ("plot-no-extension", ["simulate", *SMALL, "--plot", "{tmp}/timeline"], "use .png, .pdf or .svg"),
    ("trace-and-plot-one-file", ["simulate", *SMALL, "--trace", "{tmp}/x.svg", "--plot", "{tmp}/x.svg"], "named by both"),
    ("bench-out-under-a-file", ["bench", "--out", "{tmp}/file/b.json"], "is a file, not a folder"),
    ("calibrate-out-under-a-file", ["calibrate", "--from-raw", "--out", "{tmp}/file/p.toml"], "is a file"),
    ("calibrate-out-dev-full", ["calibrate", "--from-raw", "--out", "/dev/full"], "character device"),
    ("validate-out-under-a-file", ["validate", "--gpu", "h200", "--out", "{tmp}/file/v"], "is a file, not a folder"),
    ("validate-out-is-a-file", ["validate", "--gpu", "h200", "--out", "{tmp}/file"], "is a file, not a folder"),
    ("validate-report-dev-full", ["validate", "--gpu", "h200", "--out", "{tmp}/v", "--report", "/dev/full"], "device"),
    ("validate-h100-profile-h200-runs", ["validate", "--profile", H100_PROFILE, "--measurements", H200_RUNS,
                                         "--out", "{tmp}/v"], "measured on NVIDIA H200"),
    ("search-out-under-a-file", [*SEARCH, "--out", "{tmp}/file/s"], "is a file, not a folder"),
    ("search-bad-method", [*SEARCH, "--method", "foo", "--out", "{tmp}/s"], "unknown search method"),
    ("search-jobs-0", [*SEARCH, "--jobs", "0", "--out", "{tmp}/s/deeper"], "--jobs"),
    ("mapping-other-variant", [*MAP, "--variant", "2"], "--variant 2 conflicts"),
    ("mapping-other-partition", [*MAP, "--partition", "tiles_per_group=32"], "--partition tiles_per_group=32 conflicts"),
    ("mapping-other-layer", [*MAP, "--layer", "ResNet-1"], "--layer ResNet-1 (64,64,56,56,64) conflicts"),
    ("mapping-other-shape", [*MAP, "--shape", "2,32,20,20,64"], "--shape 2,32,20,20,64 (2,32,20,20,64) conflicts"),
    ("mapping-strategy", [*MAP, "--strategy", "sequential"], "--strategy sequential:"),
    ("mapping-dig", [*MAP, "--dig", "3"], "--dig 3:"),
    ("mapping-dgo", [*MAP, "--dgo", "3"], "--dgo 3:"),
    ("mapping-m", [*MAP, "--m", "2"], "--m 2:"),
    ("mapping-seed", [*MAP, "--seed", "1"], "--seed 1:"),
    ("mapping-opt-dig", [*MAP, "--opt", "dig=3"], "--opt dig=3:"),
    ("mapping-flag-with-trace", [*MAP, "--dig", "3", "--trace", "{tmp}/t.json"], "--dig 3:"),
    ("replay-trace-without-replay", ["simulate", *SMALL, "--replay-trace", "{tmp}/file"], "add --policy replay"),
    ("replay-trace-with-mapping", [*MAP, "--replay-trace", "{tmp}/file"], "add --policy replay"),
]


def _setup(tmp_path):
    (tmp_path / "file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    layer = Layer(2, 32, 20, 20, 32, name="small")
    partition = replace(partition_for(layer, "h200"), input_channels_per_task=16)
    graph = build_graph(layer, partition=partition)
    save_mapping(tmp_path / "mapping.json", graph, make(graph, "paper", dig=3, dgo=5, m=2), mode="persistent")


def _tree(root):
    return sorted((str(p.relative_to(root)), p.stat().st_mode) for p in root.rglob("*"))


@pytest.fixture(autouse=True)
def no_device_is_ever_replaced(monkeypatch):
    """A safety net under every case, so a regression (or this file run on old code, as root) cannot rename
    a file over /dev/full: a rename onto anything but a regular file or a new name fails the test instead."""
    real_replace, real_rename = os.replace, os.rename

    def guarded(real):
        def move(src, dst, *args, **kwargs):
            if os.path.lexists(dst) and not (os.path.isfile(dst) and not os.path.islink(dst)):
                raise AssertionError(f"refusing to rename {src} over {dst}: not a regular file")
            return real(src, dst, *args, **kwargs)
        return move
    monkeypatch.setattr(os, "replace", guarded(real_replace))
    monkeypatch.setattr(os, "rename", guarded(real_rename))


@pytest.fixture
def place(tmp_path):
    _setup(tmp_path)
    return tmp_path


def _fill(argv, tmp_path):
    return [a.replace("{tmp}", str(tmp_path)) for a in argv]


@pytest.mark.parametrize("argv, fragment", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_one_line_exit_2_nothing_left(place, capsys, argv, fragment):
    if any("/proc/" in a for a in argv) and not os.path.isdir("/proc/self"):
        pytest.skip("no /proc here")
    before = _tree(place)
    rc = main(_fill(argv, place))
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("megasim: error: ") and "Traceback" not in err, err
    assert fragment in lines[0], lines[0]
    assert ".megasim-probe" not in err and "/." not in err.replace("/./", "")  # the user's path, never a temp name
    assert out == ""
    assert _tree(place) == before
    assert all(stat.S_ISCHR(os.stat(d).st_mode) for d in DEVICES if os.path.exists(d))
    assert stat.S_ISFIFO(os.stat(place / "fifo").st_mode)


def _json(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


APPLIED = [
    # (id, extra flags with the mapping file, field of the JSON, expected value)
    ("file-alone", [], "params", {"dig": 3, "dgo": 5, "m": 2}),
    ("file-mode-is-the-default", [], "mode", "persistent"),
    ("same-shape", ["--shape", "2,32,20,20,32"], "params", {"dig": 3, "dgo": 5, "m": 2}),
    ("same-variant", ["--variant", "4"], "params", {"dig": 3, "dgo": 5, "m": 2}),
    ("same-partition", ["--partition", "input_channels_per_task=16"], "params", {"dig": 3, "dgo": 5, "m": 2}),
    ("mode-applied", ["--mode", "static"], "mode", "static"),
    ("policy-applied", ["--policy", "gpc_interleaved"], "policy", "gpc_interleaved"),
]


@pytest.mark.parametrize("flags, field, value", [c[1:] for c in APPLIED], ids=[c[0] for c in APPLIED])
def test_flags_with_a_mapping_file_are_applied(place, capsys, flags, field, value):
    assert _json(capsys, [*_fill(MAP, place), *flags, "--json"])[field] == value


def test_readme_flow_layer_and_mapping_use_the_files_partition(tmp_path, capsys):
    """`simulate --layer ResNet-2 --mapping best.json`, where the search moved off the partition table."""
    from megasim.app.catalog import load_layer
    layer = load_layer("ResNet-2")
    table = partition_for(layer, "h200")
    graph = build_graph(layer, partition=replace(table, gemm_k_per_task=64))
    assert graph.partition != table
    path = save_mapping(tmp_path / "best.json", graph, make(graph, "paper", dig=128, dgo=0, m=1))
    doc = _json(capsys, ["simulate", "--layer", "ResNet-2", "--mapping", str(path), "--json"])
    assert doc["layer"] == "ResNet-2" and doc["params"] == {"dig": 128, "dgo": 0, "m": 1}


def test_search_without_optuna_is_one_line_and_makes_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    rc = main([*SEARCH, "--out", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and 'pip install "optuna>=3.5"' in err
    assert not (tmp_path / "s").exists()


def test_a_failure_after_one_output_is_written_leaves_neither(tmp_path, capsys, monkeypatch):
    """The trace is written first; the plot then fails at write time: neither file remains."""
    from megasim.contract.errors import MegasimError

    def full_disk(*_, **__):
        raise MegasimError(f"{tmp_path / 'p.png'}: cannot write: No space left on device")
    monkeypatch.setattr("megasim.app.plot.plot_timeline", full_disk)
    rc = main(["simulate", *SMALL, "--trace", str(tmp_path / "ok.json"), "--plot", str(tmp_path / "p.png")])
    assert rc == 2 and "No space left" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_validate_writes_under_out_validate_by_default():
    assert build_parser().parse_args(["validate", "--gpu", "h200"]).out == "out/validate"


def test_validate_report_names_the_measurements_given(tmp_path, capsys, monkeypatch):
    """The Reproduce line repeats the given --measurements and --out; figures are linked from the report."""
    rows = json.loads((REPO / "docs/results/calibration/calibration_predictions_h200.json").read_text())["rows"]
    monkeypatch.setattr("megasim.app.calibrate.run.predict_runs", lambda runs, spec, jobs, shown=True: rows)
    runs = tmp_path / "in" / "my_runs.json"
    runs.parent.mkdir()
    runs.write_text((CALIBRATION_RAW / "h200_runs.json").read_text())
    profile = tmp_path / "in" / "p.toml"
    profile.write_text((REPO / "scenarios/calibrations/h200.toml").read_text())
    report = tmp_path / "r" / "report.md"
    rc = main(["validate", "--profile", str(profile), "--measurements", str(runs), "--out", str(tmp_path / "v"),
               "--report", str(report)])
    assert rc == 0, capsys.readouterr().err
    text = report.read_text()
    assert f"--measurements {runs} --out {tmp_path / 'v'} --report {report}" in text
    assert "](../v/figures/calibration_scatter_h200.png)" in text
    assert (tmp_path / "v" / "figures" / "calibration_scatter_h200.png").exists()
