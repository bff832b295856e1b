"""The best fused configuration of a bench entry, and the other variants' runs (on the NumPy emulator)."""
import numpy as np
import pytest

from megasim.app.bench_best import TOLERANCE, WARP_MODES, best_fused, other_variant_runs, timing_key, warp_runs
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.scheduling import MODES
from megasim.gpu.interpreter import EmulatorInterpreter
from megasim.gpu.winograd import direct_conv


def _entry(timings, checks, variant=4):
    return {"variant": variant, "timings": timings, "checks": checks, "mapping": {"strategy": "paper"},
            "partition": {"tiles_per_group": 64}}


def test_timing_keys_keep_the_requested_variants_names():
    assert timing_key("static", 4, 4) == "fused" and timing_key("persistent", 4, 4) == "fused-persistent"
    assert timing_key("static", 6, 4) == "fused-f6" and timing_key("persistent", 2, 4) == "fused-persistent-f2"


def test_best_is_the_fastest_run_within_its_variants_tolerance():
    ok = {"rel_err": 1e-6, "nan_count": 0}
    timings = {"fused": {"median_us": 200.0}, "fused-persistent": {"median_us": 190.0},
               "fused-raw-blockidx": {"median_us": 100.0}, "nonfused": {"median_us": 150.0},
               "fused-f6": {"median_us": 150.0}, "fused-persistent-f6": {"median_us": 140.0},
               "fused-f2": {"median_us": 120.0}}
    checks = {"fused": ok, "fused-persistent": ok, "fused-raw-blockidx": ok, "nonfused": ok,
              "fused-f6": {"rel_err": 5e-5, "nan_count": 0}, "fused-persistent-f6": {"rel_err": 5e-5, "nan_count": 3},
              "fused-f2": {"rel_err": 2 * TOLERANCE[2], "nan_count": 0}}
    best = best_fused(_entry(timings, checks))
    assert (best["mode"], best["variant"], best["median_us"], best["timing"]) == ("static", 6, 150.0, "fused-f6")
    assert best["mapping"] == {"strategy": "paper"} and best["rel_err"] == 5e-5


def test_no_accurate_run_means_no_best():
    assert best_fused(_entry({"fused": {"median_us": 1.0}}, {"fused": {"rel_err": 1.0, "nan_count": 0}})) is None


def test_other_variants_run_every_mode_on_the_same_inputs():
    layer = Layer(1, 8, 9, 10, 8, "small")
    part = Partition(tiles_per_group=4, input_channels_per_task=4, gemm_mats_per_task=4, gemm_k_per_task=4,
                     output_channels_per_task=4, filter_k_per_task=2, threads=64)
    graph = build_graph(layer, WinogradVariant(4), part)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 9, 10, 8)), rng.standard_normal((8, 3, 3, 8))
    ref = direct_conv(x, w)
    score = lambda y: {"rel_err": float(np.linalg.norm(y - ref) / np.linalg.norm(ref)), "nan_count": 0}  # noqa: E731
    timings, checks = other_variant_runs(graph, lambda g: make(g, "paper"), RunConfig(inputs=((x, w),)),
                                         lambda g: EmulatorInterpreter(np.float64), score)
    assert set(checks) == {timing_key(mode, m, 4) for mode in MODES for m in (2, 6)}
    assert "fused-ready_queue-f6" in checks
    assert all(c["rel_err"] < 1e-9 for c in checks.values())


@pytest.mark.parametrize("m", [2, 6])
def test_a_variant_the_kernels_cannot_build_is_recorded_not_raised(m):
    layer = Layer(1, 8, 9, 10, 8, "small")
    part = Partition(tiles_per_group=4, input_channels_per_task=4, gemm_mats_per_task=4, gemm_k_per_task=4,
                     output_channels_per_task=4, filter_k_per_task=2, threads=64)
    graph = build_graph(layer, WinogradVariant(4), part)

    def broken(g):
        from megasim.contract.errors import MegasimError
        if g.variant.m == m:
            raise MegasimError("cannot tile")
        return EmulatorInterpreter(np.float64)

    timings, _ = other_variant_runs(graph, lambda g: make(g, "paper"), RunConfig(), broken, lambda y: {})
    assert timings[timing_key("static", m, 4)] == {"median_us": None, "error": "cannot tile"}


WARP_LAYER = Layer(1, 16, 9, 10, 32, "warp")
WARP_PART = Partition(tiles_per_group=32, input_channels_per_task=8, gemm_mats_per_task=1, gemm_k_per_task=32,
                      output_channels_per_task=8, filter_k_per_task=4, threads=32)


def test_warp_body_runs_every_variant_and_its_non_fused_path_and_best_fused_names_it():
    graph = build_graph(WARP_LAYER, WinogradVariant(4), WARP_PART)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 9, 10, 16)), rng.standard_normal((32, 3, 3, 16))
    ref = direct_conv(x, w)
    score = lambda y: {"rel_err": float(np.linalg.norm(y - ref) / np.linalg.norm(ref)), "nan_count": 0}  # noqa: E731
    timings, checks, parts = warp_runs(graph, lambda g: make(g, "paper"), RunConfig(inputs=((x, w),)),
                                       lambda g, **kw: EmulatorInterpreter(np.float64), score)
    fused = {timing_key(mode, m, 4, "warp") for mode in WARP_MODES for m in (2, 4, 6)}
    assert set(checks) == fused | {"nonfused-warp-graph"} and set(parts) == set(checks)
    assert all(c["rel_err"] < 1e-9 for c in checks.values())
    entry = {"variant": 4, "partition": WARP_PART.to_dict(), "mapping": {}, "gemm_partitions": parts,
             "timings": {"fused": {"median_us": 100.0}, "fused-warp-persistent-f6": {"median_us": 80.0}},
             "checks": {"fused": {"rel_err": 1e-6, "nan_count": 0},
                        "fused-warp-persistent-f6": {"rel_err": 2e-5, "nan_count": 0}}}
    best = best_fused(entry)
    assert (best["mode"], best["variant"], best["gemm"]) == ("persistent", 6, "warp")


def test_warp_body_where_it_does_not_apply_is_recorded_not_run():
    part = Partition(tiles_per_group=4, input_channels_per_task=4, gemm_mats_per_task=4, gemm_k_per_task=4,
                     output_channels_per_task=4, filter_k_per_task=2, threads=64)
    graph = build_graph(Layer(1, 8, 9, 10, 8, "small"), WinogradVariant(4), part)
    timings, checks, _ = warp_runs(graph, lambda g: make(g, "paper"), RunConfig(), lambda g, **kw: None, None)
    assert checks == {} and all("does not apply" in t["error"] for t in timings.values())


def test_timing_keys_round_trip_through_the_parser():
    from megasim.app.bench_best import parse_timing_key
    for gemm in ("generic", "warp"):
        for mode in MODES:
            for m in (2, 4, 6):
                assert parse_timing_key(timing_key(mode, m, 4, gemm), 4) == (mode, m, gemm)
