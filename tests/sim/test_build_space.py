"""The decision space is declared once (`megasim.contract.build`), and the simulator sees every build in it:
the warp-tiled GEMM body has its own registers and its own calibrated laws, fused and non-fused."""
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from megasim.app.calibrate.builds import pick_rows, predict_build
from megasim.app.calibrate.measurements import load_builds
from megasim.app.calibrate.profile import simulation_model
from megasim.app.catalog import load_layer, partition_for
from megasim.app.cli import main
from megasim.contract.build import Build, build_partition, discrete_builds
from megasim.contract.errors import MegasimError
from megasim.contract.resources import gemm_body

from .conftest import assert_refused, write_files
from ..conftest import CALIBRATION_RAW


def test_a_build_names_legal_axis_values_only():
    assert Build("nonfused", 6, "static", "warp").label == "nonfused F6 warp"
    for bad in (dict(launch="split"), dict(variant=3), dict(mode="eager"), dict(gemm="wmma")):
        with pytest.raises(MegasimError, match="unknown"):
            Build(**bad)
    with pytest.raises(MegasimError, match="no scheduling mode"):
        Build("nonfused", 4, "persistent")


def test_every_layer_lists_its_builds_and_the_warp_body_only_where_it_tiles():
    resnet2, densenet = load_layer("ResNet-2"), load_layer("DenseNet")
    builds = discrete_builds(resnet2, partition_for(resnet2, "h200"))
    assert len(builds) == len(set(builds)) == 2 * 3 * 4   # bodies x variants x (three modes + non-fused)
    assert {b.gemm for b in discrete_builds(densenet, partition_for(densenet, "h200"))} == {"generic"}
    with pytest.raises(MegasimError, match="does not tile"):
        build_partition(densenet, Build(gemm="warp"), partition_for(densenet, "h200"))


def test_a_warp_build_runs_on_its_widened_partition_under_its_own_law():
    """ResNet-3's table partition has 64 output channels per GEMM task; its warp build takes 128, the
    w128-8x8 body, which the committed H200 profile gives a law of its own."""
    layer = load_layer("ResNet-3")
    own = partition_for(layer, "h200")
    wide = build_partition(layer, Build(gemm="warp"), own)
    assert (own.gemm_k_per_task, wide.gemm_k_per_task) == (64, 128)
    spec = simulation_model("h200")[0]
    law = spec.model.law("gemm_constants")
    assert gemm_body(layer, wide, "warp") in law.nonfused and gemm_body(layer, wide, "warp") in law.fused
    row = {"layer": {"n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "k": layer.k, "name": layer.name},
           "partition": wide.to_dict(), "strategy": "paper", "params": {}, "variant": 4, "mode": "static"}
    warp, generic = (predict_build({**row, "launch": "nonfused", "gemm": g}, spec) for g in ("warp", "generic"))
    assert warp < 0.95 * generic


def test_simulate_takes_the_gemm_body_and_says_which_it_ran(capsys):
    assert main(["simulate", "--layer", "ResNet-3", "--gemm", "warp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gemm"] == "warp" and out["partition"]["gemm_k_per_task"] == 128
    assert "widened for the warp GEMM body" in out["partition_source"]


def test_a_warp_build_that_does_not_tile_is_refused_in_one_line(capsys, alarm):
    assert_refused(main(["simulate", "--layer", "DenseNet", "--gemm", "warp"]), capsys.readouterr().err,
                   "does not tile")


def test_the_pick_is_the_fastest_predicted_and_its_regret_is_measured():
    layer = {"name": "L"}
    rows = [{"layer": layer, "split": "train", "launch": "fused", "variant": 4, "mode": m, "gemm": "generic",
             "us": us, "pred_us": pred} for m, us, pred in (("static", 100.0, 90.0), ("persistent", 95.0, 99.0))]
    (pick,) = pick_rows(rows)
    assert pick["pick"] == "fused F4 static generic" and pick["best"] == "fused F4 persistent generic"
    assert pick["regret"] == pytest.approx(100 / 95 - 1)


def test_the_committed_builds_file_loads_and_a_bad_row_is_refused(tmp_path):
    header, rows = load_builds(CALIBRATION_RAW / "h200_builds.json")
    assert {r["gemm"] for r in rows} == {"generic", "warp"} and header["device"] == "NVIDIA H200"
    bad = {"builds": [{**rows[0], "launch": "nonfused", "mode": "persistent"}]}
    write_files(tmp_path, {"b.json": json.dumps(bad)})
    with pytest.raises(MegasimError, match=r"builds\[0\]: a non-fused build has no scheduling mode"):
        load_builds(tmp_path / "b.json")


def test_all_builds_ranks_every_build_of_the_layer_fastest_first(capsys):
    assert main(["simulate", "--layer", "ResNet-2", "--all-builds", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    times = [b["time_us"] for b in doc["builds"]]
    fp32 = [b for b in doc["builds"] if b.get("precision", "fp32") == "fp32"]
    tensor = [b for b in doc["builds"] if b.get("precision") == "3xtf32"]
    assert len(fp32) == 24 and times == sorted(times)
    assert {(b["launch"], b["gemm"]) for b in fp32} == {(l, g) for l in ("fused", "nonfused")
                                                        for g in ("generic", "warp")}
    # the H200 profile predicts 3xTF32, so each warp build is ranked in it too
    assert len(tensor) == 12 and {b["gemm"] for b in tensor} == {"warp"}
    default = next(b for b in doc["builds"] if b["label"] == "fused F4 static generic")
    assert main(["simulate", "--layer", "ResNet-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fused_us"] == default["time_us"]


@pytest.mark.parametrize("flag", [["--gemm", "warp"], ["--mode", "persistent"], ["--variant", "6"]])
def test_all_builds_refuses_a_flag_that_pins_one_build(capsys, alarm, flag):
    assert_refused(main(["simulate", "--layer", "ResNet-2", "--all-builds", *flag]), capsys.readouterr().err,
                   f"drop {flag[0]}")


@settings(max_examples=150, deadline=None)
@given(c=st.sampled_from([3, 16, 30, 64, 128]), k=st.sampled_from([3, 32, 64, 126, 128, 256]),
       tiles=st.sampled_from([32, 64, 128]), kpg=st.sampled_from([32, 48, 64, 128]),
       mats=st.sampled_from([1, 2, 4]), threads=st.sampled_from([96, 128, 256]), m=st.sampled_from([2, 4, 6]))
def test_the_simulator_builds_a_warp_body_exactly_where_the_kernels_do(c, k, tiles, kpg, mats, threads, m):
    """A drawn partition the generic kernels build: the simulator's build of the warp body and the kernels'
    config both accept it, or both refuse it in the same words."""
    from megasim.contract.problem import Layer, Partition, WinogradVariant
    from megasim.gpu.backend import KernelConfig, config_header
    layer = Layer(2, c, 20, 20, k, "drawn")
    try:
        part = Partition(tiles_per_group=tiles, gemm_k_per_task=kpg, gemm_mats_per_task=mats, threads=threads)
        config_header(KernelConfig(layer, WinogradVariant(m), part))
    except MegasimError:
        assume(False)
    outcomes = []
    for attempt in (lambda: build_partition(layer, Build(variant=m, gemm="warp", partition=part), part),
                    lambda: config_header(KernelConfig(layer, WinogradVariant(m), part, gemm="warp"))):
        try:
            attempt()
            outcomes.append("built")
        except MegasimError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]
