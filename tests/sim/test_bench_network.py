"""`megasim bench --network` on a CPU: the GPU refusal, and the table and totals from fake per-layer benches."""
import json
from types import SimpleNamespace

import pytest

from megasim.app import bench
from megasim.app.bench_network import off_rows, times_from_bench
from megasim.app.catalog import partition_for
from megasim.app.network_spec import load_network_spec
from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import save_mapping
from megasim.contract.problem import WinogradVariant
from megasim.gpu import backend


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def fake_entry(layer, variant: int = 4, rel_err: float = 1e-7) -> dict:
    """What `bench_layer` returns, with times that follow from the shape: fused c us, persistent c/2."""
    timings = {"fused": {"median_us": float(layer.c)}, "fused-persistent": {"median_us": layer.c / 2},
               "fused-ready_queue": {"median_us": layer.c / 3}, "nonfused": {"median_us": 3.0 * layer.c},
               "nonfused-graph": {"median_us": 2.0 * layer.c}}
    return {"layer": {"name": layer.name}, "variant": variant, "mapping": {"strategy": "paper", "params": {}},
            "timings": timings, "checks": {k: {"rel_err": rel_err, "nan_count": 0} for k in timings},
            "floors_us": {"flops_at_fp32_peak": 1.0}}


def test_times_come_from_the_mode_asked_and_the_graph_replayed_nonfused_path():
    entry = fake_entry(SimpleNamespace(c=64, name="x"))
    assert (times_from_bench(entry, "static").fused_us, times_from_bench(entry, "static").nonfused_us) == (64, 128)
    assert times_from_bench(entry, "persistent").fused_us == 32
    entry["timings"]["fused"] = {"median_us": None, "error": "timed out"}
    with pytest.raises(MegasimError, match="timed out"):
        times_from_bench(entry, "static")


@pytest.mark.skipif(backend.cp is not None, reason="CuPy is installed here")
def test_bench_network_without_a_gpu_is_one_line_exit_2(capsys):
    rc, out, err = run(capsys, "bench", "--network", "resnet50")
    assert rc == 2 and not out and "needs CuPy" in err and len(err.strip().splitlines()) == 1


@pytest.fixture
def fake_gpu(monkeypatch):
    """`megasim.app.bench` with every CuPy touch replaced; `calls` records each layer benched."""
    calls = []
    pool = SimpleNamespace(free_all_blocks=lambda: None)
    monkeypatch.setattr(bench, "require_cupy", lambda: SimpleNamespace(get_default_memory_pool=lambda: pool))
    monkeypatch.setattr(bench, "measurement_header", lambda: {"device": "Fake GPU"})
    monkeypatch.setattr(bench, "copy_bandwidth", lambda cp: 3e12)

    def bench_layer(layer, args, bandwidth, **only):
        assert only == {"baselines": False, "raw_blockidx": False, "space": False}
        calls.append((layer.c, args.mapping))
        return fake_entry(layer)
    monkeypatch.setattr(bench, "bench_layer", bench_layer)
    return calls


def test_bench_network_table_and_totals(capsys, fake_gpu):
    rc, out, err = run(capsys, "bench", "--network", "resnet34", "--gpu", "h200", "--json")
    doc = json.loads(out)
    rows, t = doc["layers"], doc["totals"]
    assert rc == 0 and not err and fake_gpu == [(64, None), (128, None), (256, None), (512, None)]
    assert [r["fused_us"] for r in rows] == [64, 128, 256, 512]
    assert t["fused_us"] == 6 * 64 + 7 * 128 + 11 * 256 + 5 * 512 and t["nonfused_us"] == 2 * t["fused_us"]
    assert doc["measured"] and doc["device"] == "Fake GPU" and t["uncovered_convs"] == 7
    rc, out, _ = run(capsys, "bench", "--network", "resnet34", "--gpu", "h200")
    assert rc == 0 and out.startswith("ResNet-34 on Fake GPU (measured)") and "2.000x" in out


def test_bench_network_runs_a_mapping_file_in_its_mode(tmp_path, capsys, fake_gpu):
    conv3 = load_network_spec("resnet34").layers[1]
    graph = build_graph(conv3.layer, WinogradVariant(4), partition_for(conv3.layer, "h200"))
    path = save_mapping(tmp_path / "conv3_x.json", graph, make(graph, "paper"), mode="persistent")
    out_json = tmp_path / "out" / "net.json"
    rc, out, _ = run(capsys, "bench", "--network", "resnet34", "--gpu", "h200", "--mappings", str(tmp_path),
                     "--out", str(out_json), "--plot", str(tmp_path / "net.png"))
    doc = json.loads(out_json.read_text())
    conv3_row = doc["layers"][1]
    assert rc == 0 and (128, str(path)) in fake_gpu
    assert (conv3_row["mode"], conv3_row["fused_us"], conv3_row["nonfused_us"]) == ("persistent", 64, 256)
    assert (tmp_path / "net.png").read_bytes()[:4] == b"\x89PNG"


def test_rows_whose_fused_output_is_off_are_named():
    doc = {"layers": [{"name": "ok", "variant": 4, "rel_err": 1e-7, "nan_count": 0},
                      {"name": "nan", "variant": 4, "rel_err": 1e-7, "nan_count": 3},
                      {"name": "far", "variant": 6, "rel_err": 1e-2, "nan_count": 0}]}
    assert off_rows(doc) == ["nan", "far"]
