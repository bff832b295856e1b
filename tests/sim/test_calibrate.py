"""The fit recovers constants it did not see; metrics and profiles behave as documented."""

from concurrent.futures import ProcessPoolExecutor

import pytest

from megasim.app.calibrate.fit import fit_compute_efficiency, fit_fused, hardware_overrides
from megasim.app.calibrate.metrics import mape, summarise
from megasim.app.calibrate.predict import predict_fused, predict_kernel, predict_nonfused
from megasim.app.calibrate.profile import CalibrationProfile, load_profile, save_profile
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Op, Partition
from megasim.contract.ranking import ranks, spearman
from megasim.app.catalog import load_gpu

TRUTH = {"filter_transform": 0.2, "input_transform": 0.25, "gemm": 0.4, "output_transform": 0.3}


def _runs(spec):
    part = Partition(tiles_per_group=16).to_dict()
    runs = []
    # A-C under three mappings each; D (throughput-bound) and E (latency-bound) let stage 2 tell a block's
    # rate from its latency, which add
    for name, n, c, k in (("A", 4, 64, 128), ("B", 4, 256, 128), ("C", 32, 128, 256), ("D", 32, 256, 256),
                          ("E", 1, 32, 32)):
        layer = {"n": n, "c": c, "h": 28, "w": 28, "k": k, "name": name}
        for dig, m in ((0, 1), (64, 2), (512, 4)) if name in "ABC" else ((512, 4),):
            run = {"layer": layer, "variant": 4, "partition": part, "strategy": "paper",
                   "params": {"dig": dig, "dgo": 128, "m": m}, "split": "train"}
            run["fused_us"] = predict_fused(run, spec)
            run["nonfused_us"], _ = predict_nonfused(run, spec)
            run["nonfused_kernels_us"] = [predict_kernel(run, op, spec) for op in Op]
            runs.append(run)
    return runs


@pytest.fixture(scope="module")
def small_gpu():
    return load_gpu("h200").with_model(sm_count=16, launch_overhead_us=0.0)


STEPS = {"input_transform": 1500.0, "gemm": 300.0}


@pytest.mark.slow
def test_stage2_recovers_compute_efficiency(small_gpu):
    truth = small_gpu.with_model(compute_efficiency=TRUTH, step_cycles=STEPS, block_fixed_cycles={"gemm": 3000.0},
                                 dram_access_efficiency={"input_transform": 0.7})
    runs = _runs(truth)
    guess = small_gpu.with_model(compute_efficiency={k: 0.7 for k in TRUTH})
    with ProcessPoolExecutor(2) as pool:
        eff, errors = fit_compute_efficiency(runs, guess, evals=80, pool=pool, host_floor_us=0.0)
    dram, steps, fixed = eff.pop("dram_access_efficiency"), eff.pop("step_cycles"), eff.pop("block_fixed_cycles")
    assert set(dram) == {"filter_transform", "input_transform", "output_transform"}
    assert set(fixed) == set(TRUTH)
    fitted = guess.with_model(compute_efficiency=eff, dram_access_efficiency=dram, step_cycles=steps,
                              block_fixed_cycles=fixed)
    assert fitted.model.efficiency(Op.GEMM) == pytest.approx(TRUTH["gemm"], rel=0.08)
    for run in runs[::3]:
        for op in Op:
            # a short, latency-bound kernel pins its efficiency only loosely; its time is what must match
            assert predict_kernel(run, op, fitted) == pytest.approx(run["nonfused_kernels_us"][op], rel=0.05), errors


def test_a_pinned_transform_keeps_its_law_and_fits_only_its_dram_access(small_gpu):
    """Stage 1b pins the output transform's efficiency and latencies from its block law; stage 2 then recovers
    the DRAM access efficiency the law does not give."""
    law = {"compute_efficiency": TRUTH["output_transform"], "step_cycles": 0.0, "block_fixed_cycles": 0.0}
    truth = small_gpu.with_model(compute_efficiency=TRUTH, dram_access_efficiency={"output_transform": 0.55})
    runs = _runs(truth)
    guess = small_gpu.with_model(compute_efficiency=TRUTH)
    eff, _ = fit_compute_efficiency(runs, guess, evals=8, host_floor_us=0.0,
                                    pinned={op: law for op in (Op.OUTPUT_TRANSFORM, Op.GEMM)})
    assert eff["output_transform"] == TRUTH["output_transform"]
    assert eff["step_cycles"]["output_transform"] == 0.0 and "gemm" not in eff["dram_access_efficiency"]
    assert eff["dram_access_efficiency"]["output_transform"] == pytest.approx(0.55, abs=0.03)


def test_stage3_finds_the_block_overhead(small_gpu):
    truth = small_gpu.with_model(compute_efficiency=TRUTH, task_overhead_cycles=2500, l2_usable_fraction=0.75)
    runs = _runs(truth)
    best, err = fit_fused(runs, small_gpu.with_model(compute_efficiency=TRUTH, task_overhead_cycles=0),
                          overheads=(0, 2500, 5000), usable=(0.75,))
    assert best["task_overhead_cycles"] == 2500 and err < 1e-4


def test_stage1_reads_the_microbenchmarks():
    spec = load_gpu("h200")
    hw, model = hardware_overrides({"fp32": {"clock_mhz": 1755.0}, "dram": {"read_gbps": 4200.0, "copy_gbps": 4000.0},
                                    "l2": {"gbps": 9000.0, "knee_bytes": 45e6}, "launch": {"graph_us": 1.5}}, spec)
    assert hw == {"clock_mhz": 1755.0, "l2_gbps": 9000.0, "launch_overhead_us": 1.5}
    assert model["dram_efficiency"] == pytest.approx(4200 / 4800, abs=1e-4)
    assert model["l2_usable_fraction"] == pytest.approx(45e6 / spec.l2_bytes, abs=1e-4)


def test_stage1_launch_gap_leaves_out_the_dispatch_latency():
    """The measured in-graph boundary ends at the next kernel's first block start; the engine adds the dispatch
    latency after its launch gap, so the gap is the boundary less that latency (counted once, not twice)."""
    hw, _ = hardware_overrides({"fp32": {"clock_mhz": 2000.0}, "launch": {"graph_us": 0.864},
                                "dispatch_summary": {"latency_cycles": 534.0}}, load_gpu("h200"))
    assert hw["launch_overhead_us"] == pytest.approx(0.864 - 534 / 2000.0, abs=1e-4)
    assert hw["tb_dispatch_latency_cycles"] == 534


def test_metrics_known_values():
    assert mape([110, 90], [100, 100]) == pytest.approx(0.1)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert ranks([10, 20, 20, 30]).tolist() == [0.0, 1.5, 1.5, 3.0]
    rows = [{"layer": "L", "split": "heldout", "strategy": "paper", "params": {"dig": d}, "fused_us": f,
             "nonfused_us": 100.0, "pred_fused_us": p, "pred_nonfused_us": 110.0}
            for d, f, p in ((0, 90.0, 95.0), (1, 80.0, 99.0), (2, 95.0, 85.0))]
    s = summarise(rows)
    assert s["regret"]["L"] == pytest.approx(95 / 80 - 1)
    assert s["winner"]["L"]["right"] is True
    assert s["mape"]["heldout"]["nonfused"] == pytest.approx(0.1)


def test_profile_round_trip_and_apply(tmp_path):
    prof = CalibrationProfile(gpu="h200", hardware={"clock_mhz": 1755.0}, model={"compute_efficiency": TRUTH},
                              provenance={"kernel_build": "abc", "date": "2026-11-21"}, fit={"train_mape_fused": 0.05})
    path = save_profile(prof, tmp_path / "h200.toml")
    back = load_profile(path)
    assert back == prof
    spec = back.apply(load_gpu("h200"))
    assert spec.clock_mhz == 1755.0 and spec.model.compute_efficiency == TRUTH
    assert "kernel build abc" in back.stale()


def test_bad_profile_is_refused(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("[model]\nx = 1\n")
    with pytest.raises(MegasimError, match="calibration profile"):
        load_profile(path)
    prof = CalibrationProfile(gpu="h200", model={"warp_speed": 9})
    with pytest.raises(MegasimError, match="unknown field"):
        prof.apply(load_gpu("h200"))


def test_a_profile_is_stale_on_other_kernels_unless_revalidated_on_them():
    from megasim.app.calibrate.profile import CalibrationProfile
    from megasim.engine.laws import MODEL_LAWS
    from megasim.gpu.backend import kernel_build_hash
    every_law = {"laws": MODEL_LAWS.names()}
    old = CalibrationProfile(gpu="h200", model=every_law, provenance={"kernel_build": "000000000000"})
    assert "fitted on kernel build 000000000000" in old.stale()
    revalidated = CalibrationProfile(gpu="h200", model=every_law,
                                     provenance={"kernel_build": "000000000000",
                                                 "revalidated_builds": [kernel_build_hash()]})
    assert revalidated.stale() is None


def test_a_profile_without_a_law_calibration_now_fits_is_stale_even_when_revalidated():
    """Re-validating the kernels' text says nothing of a model that has moved on: a profile fitted before a law
    existed is stale, and one without the 3xTF32 law says its picks are FP32 only."""
    from megasim.app.calibrate.profile import CalibrationProfile
    from megasim.engine.laws import MODEL_LAWS
    from megasim.gpu.backend import kernel_build_hash
    older = [n for n in MODEL_LAWS.names() if n not in ("queue_pop", "tensor_core_gemm")]
    profile = CalibrationProfile(gpu="h100", model={"laws": older},
                                 provenance={"kernel_build": kernel_build_hash()})
    assert "queue_pop, tensor_core_gemm" in profile.stale() and "megasim calibrate --gpu h100" in profile.stale()
    assert profile.warnings()[0] == "this profile predicts no 3xtf32 build: picks are FP32 only"
    current = CalibrationProfile(gpu="h100", model={"laws": MODEL_LAWS.names()},
                                 provenance={"kernel_build": kernel_build_hash()})
    assert current.warnings() == []


def test_stage2_skips_runs_whose_kernel_times_disagree_with_their_pipeline():
    from megasim.app.calibrate.fit import consistent
    # small kernels timed from the host may add up to twice the pipeline: that is the host, not a glitch
    assert consistent({"nonfused_kernels_us": [7.2, 6.6, 8.2, 10.1], "nonfused_us": 15.3})
    # four ~80 us kernels in a 36 us pipeline (an H100 corpus shape) are a glitch
    assert not consistent({"nonfused_kernels_us": [82.6, 77.3, 79.5, 77.0], "nonfused_us": 35.8})


def test_graph_timed_kernels_attach_to_their_runs_and_are_fitted_as_graph_prefixes(small_gpu, tmp_path):
    import json
    from megasim.app.calibrate.fit import _kernel_log_error, host_hidden
    from megasim.app.calibrate.measurements import attach_graph_kernels
    from megasim.app.calibrate.predict import predict_kernel_in_graph
    spec = small_gpu.with_model(launch_overhead_us=0.9, first_launch_us=1.7)
    runs = _runs(spec)
    a = runs[0]
    graphed = [predict_kernel_in_graph(a, op, spec) for op in Op]
    assert graphed[0] == a["nonfused_kernels_us"][0]
    assert graphed[1] == pytest.approx(a["nonfused_kernels_us"][1] - 0.8)  # one launch gap, not a first launch
    path = tmp_path / "g.jsonl"
    line = {"shape": "A", "layer": a["layer"], "variant": 4, "partition": a["partition"], "graph_kernels_us": graphed}
    path.write_text(json.dumps(line) + "\n")
    assert attach_graph_kernels(runs, path) == 3  # A under its three mappings; B-E were not timed in a graph
    assert all(_kernel_log_error((a, op, spec)) < 1e-12 for op in Op)
    tiny = [{**r, "nonfused_kernels_us": [1.0] * 4} for r in runs]
    assert {r["layer"]["name"] for r in host_hidden(tiny, Op.GEMM, 20.0)} == {"A"}  # graphed: kept however small
    assert attach_graph_kernels(runs, tmp_path / "absent.jsonl") == 0
    path.write_text(json.dumps({**line, "graph_kernels_us": [1.0, 2.0]}) + "\n")
    with pytest.raises(MegasimError, match="line 1"):
        attach_graph_kernels(runs, path)
