"""Which GEMM body a build compiles, and the warp body's task shape (megasim.contract.resources)."""
from dataclasses import replace

import pytest

from megasim.app.catalog import layer_names, load_layer, partition_for
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import gemm_body, gemm_ring, gemm_smem_bytes, gemm_warp_tiled, warp_partition
from megasim.gpu.backend import KernelConfig, config_header


def test_paper_layers_take_128_channel_tasks_where_k_allows_and_densenet_keeps_the_generic_body():
    for name in layer_names()[:13]:
        layer = load_layer(name)
        part = warp_partition(layer, partition_for(layer, "h200"))
        if layer.name == "DenseNet":
            assert not gemm_warp_tiled(layer, part)
        else:
            assert gemm_warp_tiled(layer, part)
            assert part.gemm_k_per_task == (128 if layer.k >= 128 else partition_for(layer, "h200").gemm_k_per_task)


def test_warp_body_needs_whole_channel_steps_and_a_tiling_lane_grid():
    part = Partition(tiles_per_group=64, input_channels_per_task=32, gemm_mats_per_task=1, gemm_k_per_task=128,
                     output_channels_per_task=32, filter_k_per_task=8, threads=128)
    assert gemm_warp_tiled(Layer(8, 64, 16, 16, 128), part)
    assert not gemm_warp_tiled(Layer(8, 3, 16, 16, 128), part)       # C = 3: no whole 16-channel step
    assert not gemm_warp_tiled(Layer(8, 64, 16, 16, 126), part)      # K rows not 16-byte multiples
    assert not gemm_warp_tiled(Layer(8, 64, 16, 16, 128), replace(part, gemm_mats_per_task=2, threads=256))


def test_the_build_switch_follows_the_rule_and_the_ring_is_shared():
    layer = load_layer("ResNet-2")
    part = partition_for(layer, "h200")
    header = lambda gemm: config_header(KernelConfig(layer, WinogradVariant(4), part, gemm=gemm))  # noqa: E731
    assert "#define MS_GEMM_WARP 1" in header("warp") and "#define MS_GEMM_WARP 0" in header("generic")
    dense = load_layer("DenseNet")   # 96 threads, 48 channels per GEMM task: the warp tiling does not fit
    with pytest.raises(MegasimError, match="warp-tiled GEMM body does not tile"):
        config_header(KernelConfig(dense, WinogradVariant(4), partition_for(dense, "h200"), gemm="warp"))
    assert gemm_smem_bytes(part, *gemm_ring(part)) == 39936  # both bodies: ptxas's static smem for this build


def test_each_paper_layer_names_the_body_its_partition_compiles():
    layers = [load_layer(name) for name in layer_names()[:13]]
    body = {layer.name: gemm_body(layer, partition_for(layer, "h200")) for layer in layers}
    assert body["ResNet-2"] == body["ResNet-4"] == body["YOLOv3-5"] == "t128-8x8"
    assert body["ResNet-1"] == body["VGG-2"] == "t128-8x4"
    assert body["DenseNet"] == "t96-8x4"
    small_k = partition_for(Layer(2, 192, 127, 127, 3), "h200")
    assert gemm_body(Layer(2, 192, 127, 127, 3), small_k) == "t96-8x4-scalar"   # K = 3: a float at a time


def test_a_body_law_replaces_the_gemm_constants_of_that_body_only():
    from megasim.app.catalog import load_gpu
    from megasim.engine.simulate import simulate
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    gpu = load_gpu("h200")
    law = {"compute_efficiency": 0.5, "step_cycles": 900.0, "block_fixed_cycles": 20000.0}
    with_law = gpu.with_model(gemm_body_laws={"nonfused": {"t128-8x8": law}})
    assert with_law.model.for_gemm_body("t128-8x4") is with_law.model
    swapped = with_law.model.for_gemm_body("t128-8x8")
    assert swapped.compute_efficiency["gemm"] == 0.5 and swapped.block_fixed_cycles["gemm"] == 20000.0
    assert swapped.compute_efficiency["input_transform"] == gpu.model.compute_efficiency["input_transform"]
    times = {}
    for name in ("ResNet-2", "ResNet-1"):
        layer = load_layer(name)
        graph = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
        mapping = make(graph, "paper")
        times[name] = [simulate(graph, mapping, g).nonfused.time_us for g in (gpu, with_law)]
    assert times["ResNet-2"][1] > 1.2 * times["ResNet-2"][0]   # 20,000 fixed cycles a GEMM block
    assert times["ResNet-1"][1] == times["ResNet-1"][0]        # t128-8x4: no law, the gemm entries


def test_a_body_efficiency_outside_a_fraction_is_refused(tmp_path):
    import pytest
    from megasim.contract.errors import MegasimError
    from megasim.engine.model import model_from_table
    bad = {"laws": ["gemm_body_laws"], "gemm_body_laws": {"nonfused": {"t128-8x8": {"compute_efficiency": 3.0}}}}
    with pytest.raises(MegasimError, match="p.toml: gemm_body_laws nonfused \\['t128-8x8'\\]: compute_efficiency"):
        model_from_table(bad, "p.toml")


def test_the_megakernels_gemm_law_changes_the_fused_run_only():
    import pytest
    from megasim.contract.errors import MegasimError
    from megasim.app.catalog import load_gpu
    from megasim.engine.model import model_from_table
    from megasim.engine.simulate import simulate
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    gpu = load_gpu("h200")
    slow = {"compute_efficiency": 0.5, "step_cycles": 900.0, "block_fixed_cycles": 20000.0}
    fused_law = gpu.with_model(gemm_body_laws={"fused": {"t128-8x8": slow}})
    assert fused_law.for_megakernel().model.law("gemm_constants").nonfused == {"t128-8x8": slow}
    assert gpu.for_megakernel() is gpu
    layer = load_layer("ResNet-2")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
    mapping = make(graph, "paper")
    plain, slowed = (simulate(graph, mapping, g) for g in (gpu, fused_law))
    assert slowed.nonfused.time_us == plain.nonfused.time_us
    assert slowed.fused.time_us > 1.2 * plain.fused.time_us
    bad = {"laws": ["gemm_body_laws"], "gemm_body_laws": {"fused": {"t128-8x8": {"compute_efficiency": 3.0}}}}
    with pytest.raises(MegasimError, match="gemm_body_laws fused"):
        model_from_table(bad, "p.toml")
