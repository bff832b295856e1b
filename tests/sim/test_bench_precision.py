"""bench sweeps the GEMM precision: each warp build also in 3xTF32 beside its FP32 twin, keyed so FP32 keys keep
their names, and a 3xTF32 run counts only where it is FP32-accurate (within the FP32 bound and twice its twin's
error). Synthetic bench entries and the NumPy emulator: no GPU."""
import json

import numpy as np
import pytest

from megasim.app.bench import fastest_baseline, format_table
from megasim.app.bench_best import (FP32_BOUND, TOLERANCE, bench_builds, best_fused, best_nonfused, build_key,
                                    fp32_accuracy, parse_build_key, refusal, space_runs, split_precision,
                                    swept_precisions)
from megasim.app.cli import main
from megasim.contract.build import Build, discrete_builds
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import PRECISIONS
from megasim.gpu.interpreter import EmulatorInterpreter

from ..conftest import REPO
from .conftest import assert_refused

WARP_LAYER = Layer(1, 16, 9, 10, 32, "warp")
WARP_PART = Partition(tiles_per_group=32, input_channels_per_task=8, gemm_mats_per_task=1, gemm_k_per_task=32,
                      output_channels_per_task=8, filter_k_per_task=4, threads=32)
# warp-tiled, but its GEMM ring takes 4 channels a step: the contract refuses 3xTF32 on it
NARROW_LAYER = Layer(1, 4, 9, 10, 64, "narrow")
NARROW_PART = Partition(tiles_per_group=512, input_channels_per_task=4, gemm_mats_per_task=1, gemm_k_per_task=64,
                        output_channels_per_task=4, filter_k_per_task=4, threads=512)
DONE = {"fused", "fused-persistent", "fused-ready_queue", "nonfused-graph"}
TC = "3xtf32"


def ok(err):
    return {"rel_err": err, "nan_count": 0}


# keys


def test_an_fp32_build_keeps_its_key_and_its_3xtf32_twin_adds_a_suffix():
    assert build_key(Build("fused", 4, "static", "warp"), 4) == "fused-warp"
    assert build_key(Build("fused", 4, "static", "warp", precision=TC), 4) == "fused-warp+3xtf32"
    assert build_key(Build("fused", 6, "persistent", "warp", precision=TC), 4) == "fused-warp-persistent-f6+3xtf32"
    assert build_key(Build("nonfused", 2, "static", "warp", precision=TC), 4) == "nonfused-warp-graph-f2+3xtf32"


def test_keys_parse_with_their_precision_and_old_keys_read_as_fp32():
    assert parse_build_key("fused-warp-persistent-f6+3xtf32", 4) == ("fused", 6, "persistent", "warp", TC)
    assert parse_build_key("nonfused-warp-graph+3xtf32", 4) == ("nonfused", 4, "static", "warp", TC)
    assert parse_build_key("fused-warp-f2", 4) == ("fused", 2, "static", "warp", "fp32")
    assert split_precision("nonfused-warp-graph-f6+3xtf32") == ("nonfused-warp-graph-f6", TC)
    assert split_precision("fused") == ("fused", "fp32")
    for key in ("fused-warp+tf32", "fused-warp+", "fused-warp+fp32", "fused-raw-blockidx", "nonfused"):
        assert parse_build_key(key, 4) is None, key


def test_every_build_of_the_space_round_trips_through_its_key():
    builds = discrete_builds(WARP_LAYER, WARP_PART, PRECISIONS)
    assert {b.precision for b in builds} == set(PRECISIONS)
    keys = [build_key(b, 4) for b in builds]
    assert len(set(keys)) == len(keys)
    assert all(parse_build_key(build_key(b, 4), 4) == (b.launch, b.variant, b.mode, b.gemm, b.precision)
               for b in builds)


def test_a_committed_bench_file_still_reads_and_picks_what_it_recorded():
    doc = json.loads((REPO / "docs" / "results" / "bench_h200" / "bench_ResNet-2.json").read_text())
    entry = doc["layers"][0]
    best = best_fused(entry)
    assert best.pop("precision") == "fp32" and best == entry["best_fused"]
    assert fp32_accuracy(entry) == {}
    assert "fp32" in format_table([entry]).splitlines()[-1]


# the sweep


def _space(layer, part, precisions, seen=None):
    graph = build_graph(layer, WinogradVariant(4), part)

    def emulator(g, **build):
        if seen is not None:
            seen.append(build)
        return EmulatorInterpreter(np.float64)

    return space_runs(graph, lambda g: make(g, "paper"), RunConfig(), emulator, lambda y: ok(0.0), DONE, precisions)


def test_all_sweeps_each_warp_build_in_3xtf32_beside_its_fp32_twin():
    seen = []
    timings, checks, _ = _space(WARP_LAYER, WARP_PART, PRECISIONS, seen)
    twins = {k for k in checks if k.endswith("+3xtf32")}
    assert twins and {k.split("+")[0] for k in twins} == {k for k in checks if "warp" in k and "+" not in k}
    assert not any("warp" not in k for k in twins)
    assert {b["precision"] for b in seen} == set(PRECISIONS)


def test_fp32_sweeps_exactly_the_fp32_space():
    timings, _, _ = _space(WARP_LAYER, WARP_PART, ("fp32",))
    assert set(timings) == {build_key(b, 4) for b in discrete_builds(WARP_LAYER, WARP_PART)} - DONE


def test_3xtf32_sweeps_the_tensor_core_builds_and_their_twins_only():
    timings, _, _ = _space(WARP_LAYER, WARP_PART, (TC,))
    assert timings and all("warp" in k for k in timings)
    assert {k for k in timings if "+" not in k} == {k.split("+")[0] for k in timings if "+" in k}


def test_a_3xtf32_build_the_contract_refuses_is_not_in_the_space():
    assert {b.gemm for b in discrete_builds(NARROW_LAYER, NARROW_PART)} == {"generic", "warp"}
    assert not any(b.precision == TC for b in bench_builds(NARROW_LAYER, NARROW_PART, PRECISIONS))
    assert bench_builds(NARROW_LAYER, NARROW_PART, (TC,)) == []


@pytest.mark.parametrize("flag, want", [(None, PRECISIONS), ("all", PRECISIONS), ("fp32", ("fp32",)), (TC, (TC,))])
def test_the_flag_names_the_swept_precisions(flag, want):
    assert swept_precisions(flag) == want


# the accuracy rule


def test_the_fp32_bound_is_f6s_fp32_bound_not_its_looser_tolerance():
    assert FP32_BOUND == {2: 5e-6, 4: 5e-6, 6: 1e-5} and TOLERANCE[6] > FP32_BOUND[6]
    assert all(FP32_BOUND[m] <= TOLERANCE[m] for m in FP32_BOUND)


@pytest.mark.parametrize("variant, err, twin", [(4, 3e-6, 2e-6), (4, 5e-6, 2.5e-6), (6, 1e-5, 9e-6), (2, 1e-6, 5e-7)])
def test_a_3xtf32_run_within_the_bound_and_twice_its_twin_is_accepted(variant, err, twin):
    assert refusal(variant, TC, ok(err), ok(twin)) is None


@pytest.mark.parametrize("variant, err, twin, said", [
    (4, 6e-6, 5e-6, "over F(4)'s FP32 bound 5e-06"),
    (6, 2e-5, 1.5e-5, "over F(6)'s FP32 bound 1e-05"),
    (4, 3e-6, 1e-6, "over 2x its FP32 twin's 1.00e-06"),
    (6, 5e-6, 2e-6, "over 2x its FP32 twin's"),
])
def test_a_3xtf32_run_over_the_bound_or_twice_its_twin_is_refused(variant, err, twin, said):
    assert said in refusal(variant, TC, ok(err), ok(twin))


def test_a_3xtf32_run_without_a_clean_twin_or_with_nan_is_refused():
    assert "FP32 twin" in refusal(4, TC, ok(1e-6), None)
    assert "FP32 twin" in refusal(4, TC, ok(1e-6), {"rel_err": 1e-6, "nan_count": 3})
    assert "NaN" in refusal(4, TC, {"rel_err": 1e-6, "nan_count": 1}, ok(1e-6))
    assert refusal(6, "fp32", ok(2e-5)) is None  # an FP32 run keeps its variant's tolerance
    assert "over F(4)'s tolerance 5e-06" in refusal(4, "fp32", ok(1e-4))


# the best picks


def _entry(precisions=None):
    """Tensor cores fastest, but only F(4)'s fused twin is FP32-accurate."""
    entry = {"variant": 4, "mapping": {"strategy": "paper"}, "partition": {"tiles_per_group": 64},
             "timings": {"fused": {"median_us": 200.0}, "fused-warp": {"median_us": 150.0},
                         "fused-warp+3xtf32": {"median_us": 100.0}, "fused-warp-f6+3xtf32": {"median_us": 60.0},
                         "fused-warp-f6": {"median_us": 120.0}, "nonfused-graph": {"median_us": 300.0},
                         "nonfused-warp-graph": {"median_us": 250.0},
                         "nonfused-warp-graph+3xtf32": {"median_us": 90.0},
                         "fused-warp-f2+3xtf32": {"median_us": None, "error": "refused"}},
             "checks": {"fused": ok(1e-6), "fused-warp": ok(2e-6), "fused-warp+3xtf32": ok(3e-6),
                        "fused-warp-f6": ok(8e-6), "fused-warp-f6+3xtf32": ok(1.2e-5),
                        "nonfused-graph": ok(1e-6), "nonfused-warp-graph": ok(1e-6),
                        "nonfused-warp-graph+3xtf32": ok(2.5e-6)}}
    if precisions is not None:
        entry["precisions"] = precisions
    return entry


def test_the_best_is_the_fastest_fp32_accurate_run_and_names_its_precision():
    entry = _entry()
    best = best_fused(entry)
    assert (best["timing"], best["precision"], best["median_us"], best["rel_err"]) == ("fused-warp+3xtf32", TC,
                                                                                        100.0, 3e-6)
    nf = best_nonfused(entry)
    assert (nf["timing"], nf["precision"]) == ("nonfused-warp-graph", "fp32")  # 2.5e-6 > 2 x 1e-6


def test_the_entry_records_each_3xtf32_runs_verdict_and_why_not():
    verdicts = fp32_accuracy(_entry())
    assert set(verdicts) == {"fused-warp+3xtf32", "fused-warp-f6+3xtf32", "nonfused-warp-graph+3xtf32"}
    assert verdicts["fused-warp+3xtf32"] == {"accepted": True, "why": None}
    assert not verdicts["fused-warp-f6+3xtf32"]["accepted"] and "FP32 bound" in verdicts["fused-warp-f6+3xtf32"]["why"]
    assert "2x its FP32 twin" in verdicts["nonfused-warp-graph+3xtf32"]["why"]


def test_a_pinned_precision_picks_only_its_own_runs():
    assert best_fused(_entry(["fp32"]))["timing"] == "fused-warp-f6"
    assert best_fused(_entry([TC]))["timing"] == "fused-warp+3xtf32"
    assert best_nonfused(_entry([TC])) is None


# the report


BASELINES = [{"name": "cudnn:IMPLICIT_GEMM", "supported": True, "median_us": 400.0, "rel_err": 6e-7},
             {"name": "cudnn:WINOGRAD_NONFUSED", "supported": True, "median_us": 250.0, "rel_err": 4.5e-6},
             {"name": "cudnn:FFT", "supported": False, "median_us": None}]


def test_the_table_puts_the_best_builds_precision_and_error_beside_cudnns_fastest():
    entry = {**_entry(), "layer": {"name": "ResNet-2"}, "floors_us": {"a": 10.0}, "baselines": BASELINES}
    entry["best_fused"], entry["best_nonfused"] = best_fused(entry), best_nonfused(entry)
    head, _, row = format_table([entry]).splitlines()
    assert head.split()[-4:] == ["prec", "err", "cudnn", "err"]
    assert row.split()[-3:] == [TC, "3.0e-06", "4.5e-06"]
    assert fastest_baseline(entry) == {"name": "cudnn:WINOGRAD_NONFUSED", "median_us": 250.0, "rel_err": 4.5e-6}
    assert fastest_baseline({"baselines": []}) is None


# the flag


def test_the_flag_reaches_bench_and_defaults_to_all(monkeypatch):
    got = []
    monkeypatch.setattr("megasim.app.bench.bench_main", lambda args: got.append(args.precision) or 0)
    assert main(["bench", "--layer", "ResNet-2", "--precision", "fp32"]) == 0
    assert main(["bench", "--layer", "ResNet-2"]) == 0
    assert got == ["fp32", None] and swept_precisions(got[1]) == PRECISIONS


@pytest.mark.parametrize("argv, said", [
    (["--precision", "tf32"], "argument --precision: invalid choice: 'tf32'"),
    (["--precision", ""], "argument --precision: invalid choice"),
    (["--precision", "fp32", "--precision", "all"], "argument --precision: given twice"),
    (["--precision", "fp32", "--network", "resnet50"], "--precision picks the precisions of a layer's"),
    (["--precision", "3xtf32", "--mapping", "m.json"], "--network and --mapping time fixed builds"),
])
def test_a_bad_precision_flag_is_one_line_and_exit_2(capsys, alarm, argv, said):
    rc = main(["bench", *argv])
    out, err = capsys.readouterr()
    assert_refused(rc, err, said)
    assert not out
