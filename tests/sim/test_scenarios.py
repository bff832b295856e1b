"""Scenario loaders: GPU specs, Table 2 layers, network layer lists."""
import pytest

from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer
from megasim.app.catalog import layer_names, load_layer, load_network, network_names, parse_shape, partition_for
from megasim.contract.spec import GPUSpec
from megasim.app.catalog import gpu_names, load_gpu

TABLE2 = ["ResNet-1", "ResNet-2", "ResNet-3", "ResNet-4", "YOLOv3-1", "YOLOv3-2", "YOLOv3-3",
          "YOLOv3-4", "YOLOv3-5", "VGG-1", "VGG-2", "VGG-3", "DenseNet"]


def test_all_table2_layers_present():
    assert sorted(layer_names()) == sorted(n.lower() for n in TABLE2)


@pytest.mark.parametrize("name", TABLE2)
def test_table2_layers_load_with_batch_64(name):
    layer = load_layer(name)
    assert layer.name == name and layer.n == 64 and layer.h == layer.w


@pytest.mark.parametrize("name, c, hw, k", [
    ("ResNet-1", 64, 56, 64), ("ResNet-4", 512, 7, 512), ("YOLOv3-1", 32, 128, 64),
    ("YOLOv3-5", 512, 8, 1024), ("VGG-1", 128, 112, 128), ("VGG-3", 512, 28, 512),
    ("DenseNet", 192, 56, 48)])
def test_known_table2_rows(name, c, hw, k):
    assert load_layer(name) == Layer(n=64, c=c, h=hw, w=hw, k=k, name=name)


def test_layer_names_are_case_insensitive():
    assert load_layer("resnet-2") == load_layer("RESNET-2")


def test_unknown_layer_lists_known_names():
    with pytest.raises(MegasimError, match="unknown layer 'ResNet-9'.*resnet-1.*vgg-3"):
        load_layer("ResNet-9")


@pytest.fixture
def scratch(tmp_path):
    (tmp_path / "layers").mkdir()
    (tmp_path / "networks").mkdir()
    return tmp_path


def test_malformed_layer_toml_names_the_file(scratch):
    (scratch / "layers" / "bad.toml").write_text("name = \"bad\"\nn = [64\n")
    with pytest.raises(MegasimError, match=r"bad\.toml: malformed TOML"):
        load_layer("bad", root=scratch)


@pytest.mark.parametrize("body, why", [
    ("n = 64\nc = 8\nh = 8\nw = 8\n", r"missing field\(s\) \['k'\]"),
    ("n = 64\nc = 8\nh = 8\nw = 8\nk = 0\n", "k must be a positive integer"),
    ("n = 64\nc = 8\nh = 8\nw = 8\nk = \"64\"\n", "k must be a positive integer"),
])
def test_invalid_layer_fields_name_the_file(scratch, body, why):
    (scratch / "layers" / "odd.toml").write_text(body)
    with pytest.raises(MegasimError, match=rf"odd\.toml.*{why}"):
        load_layer("odd", root=scratch)


def test_parse_shape_is_n_c_h_w_k():
    layer = parse_shape("64, 32, 128, 120, 64")
    assert (layer.n, layer.c, layer.h, layer.w, layer.k) == (64, 32, 128, 120, 64)


@pytest.mark.parametrize("text", ["", "64,64,56,56", "64,64,56,56,64,1", "64,x,56,56,64",
                                  "64,64,56,56,0", "64,64,-1,56,64", "64;64;56;56;64", "1.5,2,3,4,5"])
def test_bad_shapes(text):
    with pytest.raises(MegasimError, match="shape"):
        parse_shape(text)


def test_networks_present():
    assert network_names() == ["densenet161", "resnet34", "resnet50", "vgg16", "yolov3"]


@pytest.mark.parametrize("name, convs, batch", [
    ("vgg16", 13, 64), ("resnet50", 13, 64), ("yolov3", 33, 64), ("densenet161", 78, 48), ("resnet34", 29, 64)])
def test_network_counts(name, convs, batch):
    layers = load_network(name)
    assert sum(count for _, count in layers) == convs
    assert {layer.n for layer, _ in layers} == {batch}


def test_vgg16_flops_match_the_architecture():
    # VGG-16's convolutions are about 15.3 GMAC per 224x224 image (Simonyan & Zisserman).
    flops = sum(layer.direct_flops * count for layer, count in load_network("vgg16"))
    assert flops / 64 / 2 == pytest.approx(15.35e9, rel=0.01)


def test_densenet_is_all_48_by_192():
    assert {(layer.k, layer.c) for layer, _ in load_network("DenseNet161")} == {(48, 192)}


def test_network_without_layers_is_refused(scratch):
    (scratch / "networks" / "empty.toml").write_text("name = \"empty\"\nn = 8\n")
    with pytest.raises(MegasimError, match=r"empty\.toml: needs at least one"):
        load_network("empty", root=scratch)


def test_network_bad_count_is_refused(scratch):
    (scratch / "networks" / "net.toml").write_text(
        "n = 8\n[[layers]]\nc = 8\nh = 8\nw = 8\nk = 8\ncount = 0\n")
    with pytest.raises(MegasimError, match=r"net\.toml: layers\[0\]: count"):
        load_network("net", root=scratch)


def test_unknown_network_lists_known_names():
    with pytest.raises(MegasimError, match="unknown network 'alexnet'.*resnet50"):
        load_network("alexnet")


GPUS = ["a100", "h100", "h200", "v100"]


def test_gpu_specs_present():
    assert set(GPUS) <= set(gpu_names())


@pytest.mark.parametrize("name", GPUS)
def test_every_gpu_figure_has_a_source(name):
    spec = load_gpu(name)
    figures = [f for f in GPUSpec.__dataclass_fields__ if f not in ("name", "sources")]
    assert [f for f in figures if f not in spec.sources] == []


@pytest.mark.parametrize("name, tflops", [("v100", 15.7), ("a100", 19.5), ("h100", 67.0), ("h200", 67.0)])
def test_fp32_peak_matches_datasheet(name, tflops):
    # SMs x lanes x 2 x clock must give the vendor's FP32 figure.
    assert load_gpu(name).peak_fp32_tflops == pytest.approx(tflops, rel=0.01)


@pytest.mark.parametrize("name, sms, l2_mib, dram", [
    ("v100", 80, 6, 900), ("a100", 108, 40, 1555), ("h100", 132, 50, 3350), ("h200", 132, 60, 4800)])
def test_gpu_headline_figures(name, sms, l2_mib, dram):
    spec = load_gpu(name)
    assert (spec.sm_count, spec.l2_bytes / 2**20, spec.dram_gbps) == (sms, l2_mib, dram)
    assert all(0 <= s < spec.sm_count for s in spec.first_wave_lead_sms)


def test_a_partition_table_can_name_another_gpus():
    for name in layer_names():
        layer = load_layer(name)
        assert partition_for(layer, "h100") == partition_for(layer, "h200")
