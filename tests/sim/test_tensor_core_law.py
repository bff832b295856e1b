"""The 3xTF32 GEMM law: what a GEMM task is worth in FP32 work when its products run on tensor cores."""
from dataclasses import replace

import pytest

from megasim.app.calibrate.profile import simulation_model
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.engine.interpreter import SimpyInterpreter
from megasim.engine.laws.tensor_core_gemm import TensorCoreGemm

def fp32_only():
    """The committed H200 model without its `tensor_core_gemm` law (which calibration fits): what the law adds to."""
    gpu, _, _ = simulation_model("h200")
    return replace(gpu, model=gpu.model.with_laws([x.name for x in gpu.model.laws if x.name != "tensor_core_gemm"], {}))


PART = Partition(tiles_per_group=64, input_channels_per_task=32, gemm_mats_per_task=1, gemm_k_per_task=128,
                 output_channels_per_task=32, filter_k_per_task=8, threads=128)


def test_the_factor_is_three_passes_at_the_tensor_rate_plus_the_split():
    law = TensorCoreGemm()
    tensor = 3 * 256 / (1364.55 * 0.9164)
    split = 3 * (64 + 128) / (2 * 64 * 128)
    assert law.fp_factor(PART, 256) == pytest.approx(tensor + split)
    assert TensorCoreGemm(efficiency_ratio=0.5).fp_factor(PART, 256) == pytest.approx(2 * tensor + split)


def test_only_the_gemm_gets_faster_and_3xtf32_needs_the_law():
    layer = Layer(8, 256, 28, 28, 256, "tc")
    graph = build_graph(layer, WinogradVariant(4), PART)
    gpu = fp32_only()
    with pytest.raises(MegasimError, match="needs a gemm_precision law"):
        SimpyInterpreter(gpu, gemm="warp", precision="3xtf32").run(graph, None, RunConfig("nonfused"))
    with pytest.raises(MegasimError, match="runs on the warp GEMM body's tiling"):
        SimpyInterpreter(gpu, precision="3xtf32").run(graph, None, RunConfig("nonfused"))
    tc = replace(gpu, model=gpu.model.with_laws([x.name for x in gpu.model.laws] + ["tensor_core_gemm"], {}))
    times = {}
    for precision, model in (("fp32", gpu), ("3xtf32", tc)):
        for launch in ("gemm", "input_transform", "nonfused"):
            times[precision, launch] = SimpyInterpreter(model, gemm="warp", precision=precision).run(
                graph, None, RunConfig(launch)).time_us
    assert times["3xtf32", "input_transform"] == times["fp32", "input_transform"]
    assert times["3xtf32", "gemm"] < times["fp32", "gemm"]
    assert times["3xtf32", "nonfused"] < times["fp32", "nonfused"]
    assert SimpyInterpreter(tc, gemm="warp").run(graph, None, RunConfig("gemm")).time_us == times["fp32", "gemm"]


def test_the_megakernels_gemm_tasks_take_the_fused_efficiency():
    """Measured, the 3xTF32 body loses more inside the megakernel than as a GEMM kernel
    (calibration's stage 5, docs/results/tensor_core/fitted_law.md): the law's fused form carries its own
    efficiency."""
    law = TensorCoreGemm(efficiency_ratio=0.67, fused_efficiency_ratio=0.52)
    assert law.for_megakernel().fp_factor(PART, 256) == pytest.approx(
        TensorCoreGemm(efficiency_ratio=0.52).fp_factor(PART, 256))
    assert TensorCoreGemm(efficiency_ratio=0.67).for_megakernel() == TensorCoreGemm(efficiency_ratio=0.67)
    gpu = fp32_only()
    names = [x.name for x in gpu.model.laws] + ["tensor_core_gemm"]
    fused = gpu.model.with_laws(names, {"tensor_core_gemm": {"efficiency_ratio": 0.67,
                                                             "fused_efficiency_ratio": 0.52}}).for_megakernel()
    assert fused.law("gemm_precision").efficiency_ratio == 0.52
    assert fused.law("gemm_constants") == gpu.model.for_megakernel().law("gemm_constants")
