"""The NCHW and self-reset build flags on the CPU: what the generated source says, what the model predicts, and
which cached schedules stay valid across a kernel change the profile re-validated."""
import pytest

from megasim.app.calibrate.profile import simulation_model
from megasim.app.torch.schedules import same_timed_build
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.engine import fused_kernels, nonfused_kernels
from megasim.engine.interpreter import SimpyInterpreter
from megasim.gpu.backend import DEFAULT_CONFIG, KernelConfig, config_header

LAYER = Layer(1, 64, 28, 28, 64, "flags")
PART = Partition(tiles_per_group=32, input_channels_per_task=32, gemm_mats_per_task=4, gemm_k_per_task=64,
                 output_channels_per_task=32, filter_k_per_task=4, threads=256)


def test_flags_reach_the_header_only_when_set():
    plain = config_header(DEFAULT_CONFIG)
    assert "MS_NCHW" not in plain and "MS_SELF_RESET" not in plain  # the calibrated builds' source is unchanged
    flagged = config_header(KernelConfig(DEFAULT_CONFIG.layer, DEFAULT_CONFIG.variant, DEFAULT_CONFIG.partition,
                                         layout="nchw", self_reset=True))
    assert "#define MS_NCHW 1" in flagged and "#define MS_SELF_RESET 1" in flagged
    assert KernelConfig(DEFAULT_CONFIG.layer, DEFAULT_CONFIG.variant, DEFAULT_CONFIG.partition,
                        layout="nchw").shape_key() != DEFAULT_CONFIG.shape_key()
    with pytest.raises(MegasimError, match="unknown layout 'nwhc'"):
        KernelConfig(DEFAULT_CONFIG.layer, DEFAULT_CONFIG.variant, DEFAULT_CONFIG.partition, layout="nwhc")


def test_the_3xtf32_body_is_a_flag_on_the_warp_tiling():
    warp = Partition(tiles_per_group=64, input_channels_per_task=32, gemm_mats_per_task=1, gemm_k_per_task=64,
                     output_channels_per_task=32, filter_k_per_task=8, threads=128)
    layer = Layer(2, 64, 14, 12, 64)
    fp32 = KernelConfig(layer, WinogradVariant(4), warp, gemm="warp")
    tc = KernelConfig(layer, WinogradVariant(4), warp, gemm="warp", precision="3xtf32")
    assert "MS_GEMM_TF32X3" not in config_header(fp32) and "#define MS_GEMM_TF32X3 1" in config_header(tc)
    assert tc.shape_key() != fp32.shape_key()
    with pytest.raises(MegasimError, match="unknown precision 'tf32'"):
        KernelConfig(layer, WinogradVariant(4), warp, precision="tf32")
    with pytest.raises(MegasimError, match="runs on the warp GEMM body's tiling"):
        config_header(KernelConfig(layer, WinogradVariant(4), warp, precision="3xtf32"))
    with pytest.raises(MegasimError, match="multiple of 8 channels"):
        config_header(KernelConfig(layer, WinogradVariant(4), warp, gemm="warp", precision="3xtf32", k_step=4))


def test_the_model_drops_the_reset_launch_and_the_filter_kernel():
    graph = build_graph(LAYER, WinogradVariant(4), PART)
    mapping = make(graph, "paper")
    assert fused_kernels(graph, mapping)[0].preceding_launches == 1
    assert fused_kernels(graph, mapping, self_reset=True)[0].preceding_launches == 0
    assert [k.name for k in nonfused_kernels(graph, transform_filters=False)] == [
        k.name for k in nonfused_kernels(graph)][1:]
    gpu, _, _ = simulation_model("h200")
    fused = [SimpyInterpreter(gpu, self_reset=r).run(graph, mapping, RunConfig("fused")).time_us for r in (False, True)]
    assert fused[1] == pytest.approx(fused[0] - gpu.launch_overhead_us, abs=0.05)
    nonfused = [SimpyInterpreter(gpu, transform_filters=t).run(graph, None, RunConfig("nonfused")).time_us
                for t in (True, False)]
    assert nonfused[1] < nonfused[0]


def test_cached_schedules_hold_across_builds_the_profile_counts_as_its_own():
    from megasim.app.calibrate.profile import load_profile, profile_path
    prov = load_profile(profile_path("h200")).provenance
    fitted, later = prov["kernel_build"], prov["revalidated_builds"][-1]
    assert same_timed_build(fitted, later, "h200") and same_timed_build("abc", "abc", "h200")
    assert not same_timed_build("000000000000", later, "h200")
    assert not same_timed_build(fitted, later, "no-such-gpu")
