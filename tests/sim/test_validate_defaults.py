"""`megasim validate --gpu`: the committed profile and measurements by default, and a JSON headline."""
import json

import pytest

from megasim.app.calibrate.profile import profile_path
from megasim.app.calibrate.run import validate_paths
from megasim.app.cli import headline, main
from megasim.contract.errors import MegasimError

from ..conftest import CALIBRATION_RAW


def test_gpu_alone_finds_the_committed_files():
    profile, runs = validate_paths("h200")
    assert profile.resolve() == profile_path("h200").resolve() and runs.resolve() == (CALIBRATION_RAW / "h200_runs.json").resolve()
    assert validate_paths("H100")[1].name == "h100_runs.json"


def test_given_paths_win_and_missing_ones_are_errors(tmp_path):
    mine = tmp_path / "runs.json"
    mine.write_text("{}")
    assert validate_paths("h200", measurements=mine)[1] == mine
    with pytest.raises(MegasimError, match="needs --gpu"):
        validate_paths(None, profile=profile_path("h200"))
    with pytest.raises(MegasimError, match="no such file"):
        validate_paths("h200", measurements=tmp_path / "none.json")


def test_validate_without_a_gpu_or_paths_is_one_line_and_exit_2(capsys):
    assert main(["validate"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--gpu" in err


def test_json_headline_names_heldout_mape():
    summary = {"mape": {"train": {"fused": 0.05, "nonfused": 0.07}, "heldout": {"fused": 0.04, "nonfused": 0.06}}}
    doc = json.loads(json.dumps(headline(summary, "p.toml", "r.json")))
    assert doc["heldout_mape_fused"] == 0.04 and doc["heldout_mape_nonfused"] == 0.06
    assert doc["summary"] == summary
