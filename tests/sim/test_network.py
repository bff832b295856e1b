"""Whole networks: the network files' uncovered convolutions, and `megasim simulate --network`."""
import json
from types import SimpleNamespace

import pytest

from megasim.app import network_sim
from megasim.app.catalog import network_names, partition_for
from megasim.app.network_spec import Network, NetworkLayer, load_network_spec
from megasim.app.cli import main
from megasim.app.network import LayerTimes, plan, report, run_rows, totals
from megasim.app.network_plot import plot_network
from megasim.app.network_report import format_network
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import save_mapping
from megasim.contract.problem import Layer, WinogradVariant
from megasim.contract.resources import warp_partition


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# All convolutions of each network, and their multiply-accumulates per 224x224 image, from the architectures:
# torchvision's reference counts (ResNet-34 3.66, ResNet-50 4.09, DenseNet-161 7.73 GMAC), Simonyan & Zisserman
# (VGG-16 15.35), and YOLOv3's 65.86 BFLOP at 416x416 scaled by (224/416)^2 = 9.55 GMAC.
ARCHITECTURE = {"resnet34": (36, 3.66e9), "resnet50": (53, 4.09e9), "densenet161": (160, 7.73e9),
                "vgg16": (13, 15.35e9), "yolov3": (75, 9.55e9)}


@pytest.mark.parametrize("name", sorted(ARCHITECTURE))
def test_covered_and_uncovered_convs_make_up_the_whole_network(name):
    net = load_network_spec(name)
    convs, macs = ARCHITECTURE[name]
    assert sum(e.count for e in net.layers) + sum(u.count for u in net.uncovered) == convs
    flops = (sum(e.layer.direct_flops * e.count for e in net.layers)
             + sum(u.direct_flops * u.count for u in net.uncovered))
    assert flops / 2 / net.layers[0].layer.n == pytest.approx(macs, rel=0.005)
    for u in net.uncovered:
        assert (u.kernel, u.stride) != (3, 1) and u.reason


def test_resnet34_is_its_basic_blocks():
    net = load_network_spec("resnet34")
    assert [(e.layer.c, e.layer.h, e.count) for e in net.layers] == [(64, 56, 6), (128, 28, 7), (256, 14, 11),
                                                                     (512, 7, 5)]
    assert sorted((u.kernel, u.stride) for u in net.uncovered) == [(1, 2)] * 3 + [(3, 2)] * 3 + [(7, 2)]


@pytest.fixture
def scratch(tmp_path):
    (tmp_path / "networks").mkdir()
    return tmp_path


ONE_LAYER = 'n = 8\n[[layers]]\nname = "a"\nc = 8\nh = 8\nw = 8\nk = 8\n'


@pytest.mark.parametrize("listed, message", [
    ('[{ name = "x", kernel = 3, stride = 1, count = 1 }]', "is covered"),
    ('[{ name = "x", kernel = 1, stride = 1, count = 0 }]', "count"),
    ('[{ name = "x", kernel = 0, stride = 1, count = 1 }]', "kernel"),
    ('[{ name = "x", kernel = 1, stride = 1, count = 1, c = 8 }]', "missing field"),
    ('"1x1"', "list of tables"),
])
def test_bad_uncovered_entries_are_refused(scratch, listed, message):
    (scratch / "networks" / "net.toml").write_text(f"uncovered = {listed}\n" + ONE_LAYER)
    with pytest.raises(MegasimError, match=message):
        load_network_spec("net", root=scratch)


def test_a_file_without_uncovered_says_it_does_not_know(scratch):
    (scratch / "networks" / "net.toml").write_text(ONE_LAYER)
    net = load_network_spec("net", root=scratch)
    assert net.uncovered is None
    doc = report(net, run_rows(plan(net, None), lambda e, p: LayerTimes(2.0, 3.0)), {})
    assert doc["totals"]["uncovered_convs"] is None and "does not list" in format_network(doc, "t")


def test_one_run_per_distinct_shape_and_mapping():
    a, b = Layer(8, 16, 14, 14, 16, name="a"), Layer(8, 16, 14, 14, 16, name="b")
    net = Network("net", "", (NetworkLayer("a", a, 2), NetworkLayer("b", b, 3),
                              NetworkLayer("c", Layer(8, 32, 7, 7, 32), 1)), ())
    calls = []
    rows = run_rows(plan(net, None), lambda e, p: calls.append(e.name) or LayerTimes(10.0 * len(calls), 5.0))
    assert calls == ["a", "c"]
    t = totals(net, rows)
    assert t["fused_us"] == 2 * 10 + 3 * 10 + 1 * 20 and t["nonfused_us"] == 6 * 5.0
    assert t["best_of_each_us"] == 6 * 5.0 and t["distinct_runs"] == 2 and t["covered_flop_share"] == 1.0


def test_simulate_resnet50_totals_are_the_count_weighted_sum(capsys):
    rc, out, err = run(capsys, "simulate", "--network", "resnet50", "--json")
    assert rc == 0 and not err
    doc = json.loads(out)
    rows, t = doc["layers"], doc["totals"]
    assert [(r["name"], r["count"]) for r in rows] == [("conv2_x", 3), ("conv3_x", 3), ("conv4_x", 5), ("conv5_x", 2)]
    assert t["fused_us"] == pytest.approx(sum(r["count"] * r["fused_us"] for r in rows))
    assert t["nonfused_us"] == pytest.approx(sum(r["count"] * r["nonfused_us"] for r in rows))
    assert t["speedup"] == pytest.approx(t["nonfused_us"] / t["fused_us"])
    assert t["covered_convs"] == 13 and t["uncovered_convs"] == 40 and t["distinct_runs"] == 4
    assert all(r["fused_sim_cpu_s"] > 0 and r["nonfused_sim_cpu_s"] > 0 for r in rows)
    assert all(r["fused_tbs_per_cpu_s"] == pytest.approx(r["num_tbs"] / r["fused_sim_cpu_s"]) for r in rows)
    assert {(u["name"], u["count"]) for u in doc["uncovered"]} >= {("conv1", 1), ("conv4_x expand", 6)}
    assert sum(u["count"] for u in doc["uncovered"]) == 40
    # The network's row of a layer is what `simulate --shape` of that layer predicts.
    rc, out, _ = run(capsys, "simulate", "--shape", "64,512,7,7,512", "--json")
    alone = json.loads(out)
    assert (rows[3]["fused_us"], rows[3]["nonfused_us"]) == (alone["fused_us"], alone["nonfused_us"])


class _FakeResult:
    def __init__(self, graph, mapping, mode):
        us = graph.layer.c + 100 * graph.variant.m
        self.fused, self.nonfused = SimpleNamespace(time_us=float(us)), SimpleNamespace(time_us=1.5 * us)
        self.strategy, self.params, self.num_tbs = mapping.strategy, mapping.params, graph.num_tasks
        self.infusible, self.sim_seconds, self.mode = 0, 0.0, mode
        self.fused_sim_cpu_s = self.nonfused_sim_cpu_s = self.fused_tbs_per_cpu_s = 0.0


@pytest.fixture
def fake_engine(monkeypatch):
    """The SimPy engine replaced by arithmetic on the graph, so table plumbing tests take no time; it keeps the
    GEMM body and precision each layer was simulated with."""
    import megasim.engine.simulate
    gemms = {}

    def fake(graph, mapping, gpu, policy, options, mode, gemm="generic", precision="fp32"):
        gemms[graph.layer.name] = gemm
        gemms[graph.layer.name, "precision"] = precision
        return _FakeResult(graph, mapping, mode)

    monkeypatch.setattr(megasim.engine.simulate, "simulate", fake)
    return gemms


def test_mapping_files_are_used_where_present(tmp_path, capsys, fake_engine):
    net = load_network_spec("resnet34")
    conv4 = net.layers[2]
    # a search's best.json names the whole build: here the warp GEMM body, on its own (widened) partition
    wide = warp_partition(conv4.layer, partition_for(conv4.layer, "h200"))
    graph = build_graph(conv4.layer, WinogradVariant(2), wide)
    save_mapping(tmp_path / "conv4_x" / "best.json", graph, make(graph, "paper", dig=64, dgo=0, m=2),
                 mode="persistent", gemm="warp", precision="3xtf32")
    rc, out, _ = run(capsys, "simulate", "--network", "resnet34", "--mappings", str(tmp_path), "--json")
    rows = {r["name"]: r for r in json.loads(out)["layers"]}
    assert rc == 0 and rows["conv4_x"]["mapping"] == str(tmp_path / "conv4_x" / "best.json")
    assert (rows["conv4_x"]["variant"], rows["conv4_x"]["mode"], rows["conv4_x"]["params"]) == (
        2, "persistent", {"dig": 64, "dgo": 0, "m": 2})
    assert rows["conv4_x"]["gemm"] == fake_engine[conv4.layer.name] == "warp"
    assert rows["conv4_x"]["precision"] == fake_engine[conv4.layer.name, "precision"] == "3xtf32"
    assert all(rows[n]["gemm"] == "generic" and rows[n]["precision"] == "fp32" for n in ("conv2_x", "conv3_x",
                                                                                        "conv5_x"))
    rc, out, _ = run(capsys, "simulate", "--network", "resnet34", "--mappings", str(tmp_path))
    assert "builds of conv4_x: fused F2 persistent warp 3xtf32 | non-fused F2 warp 3xtf32" in out
    assert rows["conv4_x"]["fused_us"] == 256 + 200
    assert all(rows[n]["mapping"] == "default" and rows[n]["variant"] == 4 for n in ("conv2_x", "conv3_x", "conv5_x"))


def test_a_mapping_file_for_another_shape_is_refused(tmp_path, capsys, fake_engine):
    graph = build_graph(Layer(64, 64, 56, 56, 64))
    save_mapping(tmp_path / "conv5_x.json", graph, make(graph, "sequential"))
    rc, _, err = run(capsys, "simulate", "--network", "resnet34", "--mappings", str(tmp_path))
    assert rc == 2 and "another graph" in err and len(err.strip().splitlines()) == 1


def test_the_table_lists_every_layer_the_totals_and_what_is_left_out(capsys, fake_engine):
    rc, out, _ = run(capsys, "simulate", "--network", "resnet34")
    lines = out.splitlines()
    assert rc == 0 and sum(line.startswith("conv") and "default" in line for line in lines) == 4
    assert any(line.startswith("total") and " 29 " in line for line in lines)
    assert "7 convolutions" in out and "conv3_x downsample" in out and "1x1/2" in out and "x1" in out
    assert "% of the network's convolution FLOPs" in out


def test_plot_is_a_png(tmp_path, capsys, fake_engine):
    rc, _, _ = run(capsys, "simulate", "--network", "densenet161", "--plot", str(tmp_path / "net.png"), "--json")
    assert rc == 0 and (tmp_path / "net.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, message", [
    (["simulate", "--network", "alexnet"], "unknown network 'alexnet'"),
    (["simulate", "--network", "resnet50", "--layer", "ResNet-1"], "no --layer"),
    (["simulate", "--network", "resnet50", "--trace", "t.json"], "no --trace"),
    (["simulate", "--network", "resnet50", "--mappings", "/nonexistent/folder"], "not a folder"),
    (["bench", "--network", "alexnet"], "unknown network 'alexnet'"),
])
def test_bad_network_input_is_one_line_and_exit_2(capsys, argv, message):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_mapping_folder_with_nothing_for_the_network_is_refused(tmp_path, capsys):
    (tmp_path / "unrelated.json").write_text("{}")
    rc, _, err = run(capsys, "simulate", "--network", "resnet50", "--mappings", str(tmp_path))
    assert rc == 2 and "no mapping file for any layer of ResNet-50" in err and "conv2_x" in err


def test_layers_command_lists_resnet34(capsys):
    rc, out, _ = run(capsys, "layers")
    assert rc == 0 and "resnet34" in out and set(network_names()) <= set(out.split("networks: ")[1].strip().split(", "))


def test_plot_network_draws_from_the_report_alone(tmp_path):
    net = load_network_spec("vgg16")
    doc = report(net, run_rows(plan(net, None), lambda e, p: LayerTimes(e.layer.c + 1.0, 100.0)), {})
    plot_network(doc, tmp_path / "vgg.png", "VGG-16")
    assert (tmp_path / "vgg.png").stat().st_size > 10_000


def test_the_help_names_the_mapping_files_the_command_reads():
    from megasim.app.cli import MAPPINGS_HELP
    from megasim.app.network import MAPPING_FILES
    assert all(f"DIR/{pattern}" in MAPPINGS_HELP for pattern in MAPPING_FILES)
