"""`simulate` says what it ran on: the partition and where it came from, the spec file and the profile read,
and a glossary that explains every label and symbol it prints."""
import json
import re
import shutil
from pathlib import Path

import pytest

from megasim.app.catalog import SCENARIOS, load_layer, partition_for
from megasim.app.cli import main
from megasim.app.glossary import SIMULATE_GLOSSARY
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import save_mapping
from megasim.contract.problem import Layer

SMALL = ["--shape", "2,32,20,20,32"]
STUDY_PROFILE = Path(__file__).parents[1] / "fixtures" / "resident_study" / "profiles" / "h200_resident_law.toml"


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def run_json(capsys, *argv) -> dict:
    return json.loads(run(capsys, "simulate", *argv, "--json"))


def test_a_named_layer_says_its_table_row_in_text_and_json(capsys):
    table = partition_for(load_layer("ResNet-2"), "h200")
    out = run(capsys, "simulate", "--layer", "ResNet-2")
    assert "partition: " + ",".join(f"{k}={v}" for k, v in table.to_dict().items()) in out.splitlines()
    assert 'partition from: scenarios/partitions/h200.toml [layers] "ResNet-2" over [default]' in out.splitlines()
    doc = run_json(capsys, "--layer", "ResNet-2")
    assert doc["partition"] == table.to_dict() and doc["partition"]["gemm_k_per_task"] == 128
    assert doc["partition_source"] == 'scenarios/partitions/h200.toml [layers] "ResNet-2" over [default]'


def test_the_shape_of_a_named_layer_keeps_the_default_and_names_the_row_it_missed(capsys):
    """By name, never by shape: the committed predictions of custom shapes stay as they were."""
    doc = run_json(capsys, "--shape", "64,128,28,28,128")
    assert doc["partition"]["gemm_k_per_task"] == 64
    assert doc["partition_source"] == ("scenarios/partitions/h200.toml [default]; this is ResNet-2's shape, "
                                       "whose row --layer ResNet-2 gets")
    assert doc["fused_us"] != run_json(capsys, "--layer", "ResNet-2")["fused_us"]


@pytest.mark.parametrize("gpu, overrides, source", [
    ("h100", None, "scenarios/partitions/h200.toml (same_as in scenarios/partitions/h100.toml) [default_small_k]"),
    ("a100", None, "Partition() defaults (no scenarios/partitions/a100.toml)"),
    ("h200", "tiles_per_group=32",
     "scenarios/partitions/h200.toml [default_small_k], then --partition tiles_per_group=32"),
])
def test_defaults_and_overrides_say_so(capsys, gpu, overrides, source):
    doc = run_json(capsys, *SMALL, "--gpu", gpu, *(["--partition", overrides] if overrides else []))
    assert doc["partition_source"] == source
    assert doc["partition"] == partition_for(Layer(2, 32, 20, 20, 32), gpu, overrides).to_dict()


def test_a_mapping_file_is_the_partitions_source(tmp_path, capsys):
    graph = build_graph(Layer(2, 32, 20, 20, 32, name="custom"))
    path = save_mapping(tmp_path / "best.json", graph, make(graph, "paper"))
    doc = run_json(capsys, "--mapping", str(path))
    assert doc["partition_source"] == f"the --mapping file {path}"
    assert doc["partition"] == graph.partition.to_dict()
    assert f"partition from: the --mapping file {path}" in run(capsys, "simulate", "--mapping", str(path))


def test_the_model_line_names_the_spec_and_the_profile(capsys):
    out = run(capsys, "simulate", *SMALL)
    model = next(line for line in out.splitlines() if line.startswith("model: "))
    assert model.startswith("model: calibrated profile scenarios/calibrations/h200.toml (kernel build ")
    assert "over datasheet spec scenarios/gpus/h200.toml" in model
    doc = run_json(capsys, *SMALL, "--profile", str(STUDY_PROFILE))
    assert doc["model"].startswith(f"calibrated profile {STUDY_PROFILE.relative_to(SCENARIOS.parent)} (--profile; ")
    assert run_json(capsys, *SMALL, "--gpu", "a100")["model"] == (
        "datasheet spec scenarios/gpus/a100.toml (no calibration profile: no scenarios/calibrations/a100.toml)")


def test_a_spec_file_called_h200_takes_no_committed_calibration(tmp_path, capsys):
    mine = tmp_path / "h200.toml"
    shutil.copy(SCENARIOS / "gpus" / "h200.toml", mine)
    doc = run_json(capsys, *SMALL, "--gpu", str(mine))
    assert doc["model"] == (f"datasheet spec {mine} (a --gpu spec file: no committed calibration applies; "
                            "--profile adds one)")
    assert doc["uncertainty"] is None
    datasheet = run_json(capsys, *SMALL, "--gpu", "h200", "--uncalibrated")
    calibrated = run_json(capsys, *SMALL, "--gpu", "h200")
    assert doc["fused_us"] == datasheet["fused_us"] != calibrated["fused_us"]
    assert doc["partition_source"] == calibrated["partition_source"]  # the table is the name's: printed, not silent


@pytest.mark.parametrize("name", ["myspec.toml", "h200.toml"])
def test_a_spec_file_with_a_profile_says_both_apply(tmp_path, capsys, name):
    mine = tmp_path / name
    shutil.copy(SCENARIOS / "gpus" / "h200.toml", mine)
    profile = SCENARIOS / "calibrations" / "h200.toml"
    doc = run_json(capsys, *SMALL, "--gpu", str(mine), "--profile", str(profile))
    assert doc["model"].startswith("calibrated profile scenarios/calibrations/h200.toml (--profile; kernel build ")
    assert f"over spec file {mine}: both apply" in doc["model"] and "(fitted on h200)" in doc["model"]
    if name == "h200.toml":  # the H200's figures, profile and partition table: the named GPU's prediction
        assert doc["fused_us"] == run_json(capsys, *SMALL, "--gpu", "h200")["fused_us"]


def _labels(out: str) -> set[str]:
    """Every symbol and label a simulate table shows, read off the text: `NAME=` keys, the label before a
    line's or a column's first colon, the table's column heads and row names."""
    found = set(re.findall(r"(?<![\w{'])([A-Za-z_]\w*)=", out))
    for line in out.splitlines():
        pieces = [p.strip() for p in re.split(r"\s{2,}|\s\|\s", line) if p.strip()]
        for piece in pieces:
            label = re.match(r"([\w%][\w %/()+,.-]*?):\s", piece)
            if label:
                found.add(label.group(1))
        if line.startswith(" "):
            found.update(pieces)
        elif len(pieces) > 1 and all(re.fullmatch(r"[-\d.%]+", p) for p in pieces[1:]):
            found.add(pieces[0])
    found.update(re.findall(r"\((simulated in) ", out))
    return found


def _covered(symbol: str, text: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(symbol)}(?![\w])", text) is not None


def test_the_glossary_covers_every_label_simulate_prints(capsys):
    out = run(capsys, "simulate", "--layer", "ResNet-2", "--partition", "threads=128")
    labels = _labels(out)
    assert {"N_F", "S_I", "infusible tasks", "floors", "time (us)", "fused megakernel", "partition from",
            "tiles_per_group", "model", "90% intervals (held-out residuals)"} <= labels  # the reader reads
    assert [s for s in sorted(labels) if not _covered(s, SIMULATE_GLOSSARY)] == []


def test_the_glossary_is_the_help_epilog_and_the_docs_block():
    import contextlib
    import io
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert SIMULATE_GLOSSARY in help_text.getvalue()
    model_md = (Path(__file__).parents[2] / "docs" / "model.md").read_text()
    section = model_md.split("## Reading simulate's output", 1)[1]
    assert f"```\n{SIMULATE_GLOSSARY}```" in section


def test_network_rows_carry_their_partition_and_the_text_says_where_from(capsys):
    doc = json.loads(run(capsys, "simulate", "--network", "resnet34", "--json"))
    conv3 = next(r for r in doc["layers"] if r["name"] == "conv3_x")
    assert conv3["partition"]["gemm_k_per_task"] == 64 and "ResNet-2's shape" in conv3["partition_source"]
    out = run(capsys, "simulate", "--network", "resnet34")
    assert any(line.startswith("partition of ") and "conv3_x" in line for line in out.splitlines())
    assert out.splitlines()[-1] == f"model: {doc['model']}"
