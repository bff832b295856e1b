"""A calibration measures the whole decision space, so a GPU's profile predicts all of it: the 3xTF32 body beside
its FFMA twin (part `tensor_core`), the tensor cores' own rate (section `mma_tf32`), every build in both
precisions, and every build of the held-out corpus shapes (part `corpus_builds`), which judges the pick."""
import json

import pytest

from megasim.app.calibrate import builds_runs
from megasim.app.calibrate.builds import decision_summary, pick_rows, predictable, training_rows
from megasim.app.calibrate.tensor_core_runs import measure_tensor_core, tensor_builds
from megasim.app.calibrate.tensor_law import tensor_rates
from megasim.app.catalog import load_gpu
from megasim.contract.errors import MegasimError

from ..conftest import CALIBRATION_RAW


def test_the_tensor_rates_are_the_gpus_own_measurement():
    micro = json.loads((CALIBRATION_RAW / "h200_micro.json").read_text())
    assert tensor_rates(micro, "m.json") == {"tf32_flop_per_cycle_per_sm": 1364.55, "tensor_clock_ratio": 0.9164}
    del micro["mma_tf32"]["fp32_sm_clock_mhz"]  # then the file's own FFMA clock
    assert tensor_rates(micro, "m.json")["tensor_clock_ratio"] == round(1814.4623 / 1979.4941, 4)
    del micro["mma_tf32"]
    with pytest.raises(MegasimError, match="m.json: the 3xTF32 law needs .* mma_tf32.*megasim calibrate"):
        tensor_rates(micro, "m.json")


def test_every_paper_layer_whose_warp_tiling_fits_gets_three_3xtf32_rows():
    assert tensor_builds("h100") == tensor_builds("h200")
    assert len(tensor_builds("h200")) == 36 and {m for _, m in tensor_builds("h200")} == {2, 4, 6}
    assert tensor_builds("a100") == []  # a datasheet GPU without a table: Partition() defaults, no warp tiling
    assert tensor_builds("nogpu") == tensor_builds("h200")  # a GPU with no spec: the portable table, which tiles


def test_a_gpu_megasim_has_no_spec_of_runs_the_portable_table():
    from megasim.app.catalog import load_layer, partition_and_source
    from megasim.contract.build import discrete_builds
    from megasim.contract.resources import PRECISIONS
    layer = load_layer("ResNet-2")
    part, source = partition_and_source(layer, "mygpu")
    assert source == "scenarios/partitions/portable.toml [default]" and part.gemm_k_per_task == 64
    assert {b.precision for b in discrete_builds(layer, part, PRECISIONS)} == {"fp32", "3xtf32"}
    assert partition_and_source(layer, "v100")[1].startswith("Partition() defaults")


def test_a_finished_tensor_core_file_is_not_measured_again(tmp_path):
    """The committed H200 rows are every row: nothing left, and no GPU asked for."""
    path = tmp_path / "h200_tensor_core.json"
    path.write_bytes((CALIBRATION_RAW / "h200_tensor_core.json").read_bytes())
    assert measure_tensor_core("h200", path, log=lambda *_: None) == {"done": 36, "left": 0}


def _timed(layer, candidates, reps, workers=0):
    """`bench_build.time_builds`'s rows, with a made-up time per build."""
    return [{**c.build.to_dict(), "options": dict(c.options), "strategy": c.strategy,
             "measured_us": 100.0 + 10 * i, "nan_count": 0} for i, c in enumerate(candidates)]


def test_the_held_out_corpus_shapes_get_every_build_and_a_rerun_continues(tmp_path, monkeypatch):
    from megasim.app.calibrate.corpus import generate
    monkeypatch.setattr("megasim.app.bench_build.time_builds", _timed)
    monkeypatch.setattr("megasim.gpu.backend.measurement_header", lambda: {"device": "test"})
    path = tmp_path / "g_corpus_builds.json"
    held = [s.layer.name for s in generate(32, "h200") if s.split == "heldout"]
    first = builds_runs.measure_corpus_builds("h200", path, corpus=32, budget_s=-1, log=lambda *_: None)
    assert first == {"done": 0, "left": len(held)}  # the budget is checked before each shape
    done = builds_runs.measure_corpus_builds("h200", path, corpus=32, log=lambda *_: None)
    assert done == {"done": len(held), "left": 0}
    rows = json.loads(path.read_text())["builds"]
    assert {r["layer"]["name"] for r in rows} <= set(held) and {r["split"] for r in rows} == {"heldout"}
    assert {r["precision"] for r in rows} == {"fp32", "3xtf32"}
    again = builds_runs.measure_corpus_builds("h200", path, corpus=32, log=lambda *_: None)
    assert again == {"done": len(held), "left": 0}


def _row(layer, launch, us, pred, precision="fp32", mode="static"):
    return {"layer": {"name": layer}, "split": "train", "launch": launch, "variant": 4, "mode": mode,
            "gemm": "warp", "precision": precision, "us": us, "pred_us": pred}


def test_the_pick_is_judged_against_the_fastest_build_measured_even_one_the_model_cannot_predict():
    rows = [_row("L", "fused", 110.0, 100.0), _row("L", "nonfused", 100.0, 105.0),
            _row("L", "nonfused", 80.0, None, "3xtf32")]
    fp32 = rows[:2]
    (pick,) = pick_rows(fp32, rows)
    assert pick["pick"] == "fused F4 static warp" and pick["best"] == "nonfused F4 warp 3xtf32"
    assert pick["regret"] == pytest.approx(110 / 80 - 1)
    assert pick["fusion_margin"] == pytest.approx(100 / 110 - 1) and pick["call_right"] is False
    summary = decision_summary(fp32, rows)
    assert summary["clear_calls"] == 1 and summary["clear_calls_right"] == 0
    assert summary["mape"] == pytest.approx((abs(100 / 110 - 1) + abs(105 / 100 - 1)) / 2)


def test_stage_4_fits_on_fp32_builds_and_a_profile_without_the_tensor_law_predicts_only_them():
    rows = [{**_row("ResNet-2", "nonfused", 100.0, 0.0, p), "layer": json.loads(
        (CALIBRATION_RAW / "h200_builds.json").read_text())["builds"][0]["layer"], "variant": 6,
        "partition": json.loads((CALIBRATION_RAW / "h200_builds.json").read_text())["builds"][0]["partition"]}
            for p in ("fp32", "3xtf32")]
    assert [r["precision"] for r in training_rows(rows, gemm="warp")] == ["fp32"]
    h100 = load_gpu("h100")
    assert [r["precision"] for r in predictable(rows, h100)] == ["fp32"]
