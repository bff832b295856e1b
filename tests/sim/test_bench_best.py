"""The best builds of a bench entry, and the rest of the decision space timed beside the requested build (on the
NumPy emulator)."""
import numpy as np
import pytest

from megasim.app.bench_best import (TOLERANCE, best_fused, best_nonfused, build_key, parse_build_key, space_runs,
                                    timing_key)
from megasim.contract.build import discrete_builds
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import PRECISIONS
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


SMALL = Layer(1, 8, 9, 10, 8, "small")
SMALL_PART = Partition(tiles_per_group=4, input_channels_per_task=4, gemm_mats_per_task=4, gemm_k_per_task=4,
                       output_channels_per_task=4, filter_k_per_task=2, threads=64)
DONE = {"fused", "fused-persistent", "fused-ready_queue", "nonfused-graph"}  # what bench times first


def _scored(layer, x, w):
    ref = direct_conv(x, w)
    return lambda y: {"rel_err": float(np.linalg.norm(y - ref) / np.linalg.norm(ref)), "nan_count": 0}


def test_the_space_runs_every_build_but_those_done_on_the_same_inputs():
    graph = build_graph(SMALL, WinogradVariant(4), SMALL_PART)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 9, 10, 8)), rng.standard_normal((8, 3, 3, 8))
    seen = []

    def emulator(g, **build):
        seen.append(build)
        return EmulatorInterpreter(np.float64)

    timings, checks, parts = space_runs(graph, lambda g: make(g, "paper"), RunConfig(inputs=((x, w),)), emulator,
                                        _scored(SMALL, x, w), DONE)
    want = {build_key(b, 4) for b in discrete_builds(SMALL, SMALL_PART)} - DONE
    assert set(checks) == want == {timing_key(mode, m, 4) for mode in MODES for m in (2, 6)} | {
        "nonfused-graph-f2", "nonfused-graph-f6"}
    assert all(c["rel_err"] < 1e-9 for c in checks.values())
    assert {b["graph_capture"] for b in seen} == {True, False} and set(parts) == want


@pytest.mark.parametrize("m", [2, 6])
def test_a_build_the_kernels_cannot_build_is_recorded_not_raised(m):
    graph = build_graph(SMALL, WinogradVariant(4), SMALL_PART)

    def broken(g, **build):
        from megasim.contract.errors import MegasimError
        if g.variant.m == m:
            raise MegasimError("cannot tile")
        return EmulatorInterpreter(np.float64)

    timings, _, _ = space_runs(graph, lambda g: make(g, "paper"), RunConfig(), broken, lambda y: {}, DONE)
    assert timings[timing_key("static", m, 4)] == {"median_us": None, "error": "cannot tile"}
    assert timings[f"nonfused-graph-f{m}"] == {"median_us": None, "error": "cannot tile"}


WARP_LAYER = Layer(1, 16, 9, 10, 32, "warp")
WARP_PART = Partition(tiles_per_group=32, input_channels_per_task=8, gemm_mats_per_task=1, gemm_k_per_task=32,
                      output_channels_per_task=8, filter_k_per_task=4, threads=32)


def test_warp_builds_run_in_every_mode_and_non_fused_and_the_best_names_their_body():
    graph = build_graph(WARP_LAYER, WinogradVariant(4), WARP_PART)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 9, 10, 16)), rng.standard_normal((32, 3, 3, 16))
    timings, checks, parts = space_runs(graph, lambda g: make(g, "paper"), RunConfig(inputs=((x, w),)),
                                        lambda g, **kw: EmulatorInterpreter(np.float64), _scored(WARP_LAYER, x, w), DONE)
    warp = {timing_key(mode, m, 4, "warp") for mode in MODES for m in (2, 4, 6)}
    assert warp | {"nonfused-warp-graph", "nonfused-warp-graph-f2", "nonfused-warp-graph-f6"} <= set(checks)
    assert all(c["rel_err"] < 1e-9 for c in checks.values())
    entry = {"variant": 4, "partition": WARP_PART.to_dict(), "mapping": {}, "gemm_partitions": parts,
             "timings": {"fused": {"median_us": 100.0}, "fused-warp-persistent-f6": {"median_us": 80.0},
                         "nonfused-graph": {"median_us": 90.0}, "nonfused-warp-graph-f6": {"median_us": 70.0},
                         "nonfused-warp-graph-f2": {"median_us": 60.0}},
             "checks": {"fused": {"rel_err": 1e-6, "nan_count": 0},
                        "fused-warp-persistent-f6": {"rel_err": 2e-5, "nan_count": 0},
                        "nonfused-graph": {"rel_err": 1e-6, "nan_count": 0},
                        "nonfused-warp-graph-f6": {"rel_err": 2e-5, "nan_count": 0},
                        "nonfused-warp-graph-f2": {"rel_err": 1e-5, "nan_count": 0}}}  # over F(2)'s 5e-6
    best = best_fused(entry)
    assert (best["mode"], best["variant"], best["gemm"]) == ("persistent", 6, "warp")
    assert best_nonfused(entry)["timing"] == "nonfused-warp-graph-f6"


def test_warp_builds_where_the_tiling_does_not_fit_are_not_in_the_space():
    graph = build_graph(SMALL, WinogradVariant(4), SMALL_PART)
    timings, _, _ = space_runs(graph, lambda g: make(g, "paper"), RunConfig(),
                               lambda g, **kw: EmulatorInterpreter(np.float64), lambda y: {}, DONE)
    assert not any("warp" in key for key in timings)


def test_build_keys_round_trip_through_the_parser():
    for b in discrete_builds(WARP_LAYER, WARP_PART, PRECISIONS):
        assert parse_build_key(build_key(b, 4), 4) == (b.launch, b.variant, b.mode, b.gemm, b.precision)
    assert parse_build_key("nonfused", 4) is None and parse_build_key("fused-raw-blockidx", 4) is None


def test_timing_keys_round_trip_through_the_parser():
    from megasim.app.bench_best import parse_timing_key
    for gemm in ("generic", "warp"):
        for mode in MODES:
            for m in (2, 4, 6):
                assert parse_timing_key(timing_key(mode, m, 4, gemm), 4) == (mode, m, gemm)
