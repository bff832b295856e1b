"""A GPU's spec written from its raw microbenchmark file: what the runtime reported and what was measured, each
with its source, in the form scenarios/gpus holds, and usable by `megasim simulate --gpu PATH` at once."""
import json

import pytest

from megasim.app.catalog import load_gpu
from megasim.app.calibrate.spec_writer import DECLARED, REPORTED, spec_tables
from megasim.app.cli import main
from megasim.contract.errors import MegasimError

from ..conftest import FIXTURES, REPO

# `megasim calibrate --gpu h200 --spec-only` on the lent H200, 2026-11-28 (4.9 s): its raw microbenchmark file.
MEASURED = FIXTURES / "h200_micro_2026-11-28.json"


@pytest.fixture
def raw(tmp_path):
    (tmp_path / "newgpu_micro.json").write_text(MEASURED.read_text())
    return tmp_path


def test_the_spec_agrees_with_the_hand_written_one_where_the_device_reports(raw):
    tables = spec_tables(json.loads((raw / "newgpu_micro.json").read_text()))
    hw, ours = tables["hardware"], load_gpu("h200")
    for field in REPORTED.values():
        assert hw[field] == getattr(ours, field), field
    assert hw["fp32_flops_per_cycle_per_sm"] == ours.fp32_flops_per_cycle_per_sm == 256
    assert hw["first_wave_lead_sms"] == list(ours.first_wave_lead_sms)
    assert set(tables["sources"]) == set(hw)  # every figure says where it came from
    assert all("measured on NVIDIA H200" in tables["sources"][f] for f in ("dram_gbps", "clock_mhz", "l2_gbps"))
    assert all(tables["sources"][f] == why for f, (_, why) in DECLARED.items())


def test_calibrate_spec_only_writes_a_spec_simulate_takes(raw, capsys):
    out = raw / "gpus" / "newgpu.toml"
    assert main(["calibrate", "--gpu", "newgpu", "--spec-only", "--from-raw", "--raw", str(raw), "--out", str(out)]) == 0
    assert f"megasim simulate --gpu {out}" in capsys.readouterr().out
    assert main(["simulate", "--gpu", str(out), "--layer", "ResNet-2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu"] == "newgpu" and doc["fused_us"] > 0


def test_a_raw_file_without_the_devices_properties_is_refused_before_anything_is_written(tmp_path, capsys):
    (tmp_path / "old_micro.json").write_text((REPO / "scenarios/calibrations/raw/h200_micro.json").read_text())
    out = tmp_path / "old.toml"
    assert main(["calibrate", "--gpu", "old", "--spec-only", "--from-raw", "--raw", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lacks the device's reported properties" in err and not out.exists()
    with pytest.raises(MegasimError, match="no fp32"):
        spec_tables({"header": json.loads(MEASURED.read_text())["header"], "dram": {"read_gbps": 1.0}})


def test_megasim_gpus_lists_a_written_spec_beside_the_hand_written_ones(raw, capsys, monkeypatch):
    monkeypatch.chdir(raw)
    assert main(["calibrate", "--gpu", "newgpu", "--spec-only", "--from-raw", "--raw", "."]) == 0
    capsys.readouterr()
    assert main(["gpus"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("out/calibrate/gpus/newgpu.toml NVIDIA H200") and any(l.startswith("h200 ") for l in lines)
