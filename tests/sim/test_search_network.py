"""`megasim search --network` (each distinct layer once, a summary weighted by count) and Dask from the CLI."""
import json

import pytest

from megasim.app import catalog
from megasim.app.cli import main
from megasim.app.search.network import distinct_layers
from megasim.contract.problem import Layer

pytest.importorskip("optuna")

SPACE = ["--launch", "fused", "--variant", "4", "--mode", "static", "--gemm", "generic", "--space", "dig=0,64",
         "--space", "dgo=0", "--space", "m=1", "--space", "tiles_per_group=64", "--space", "gemm_k_per_task=64",
         "--space", "gemm_mats_per_task=2", "--space", "threads=256"]
TINY = """name = "Tiny"
n = 2
[[layers]]
name = "a"
c = 32
h = 20
w = 20
k = 64
count = 2
[[layers]]
name = "b"
c = 32
h = 24
w = 24
k = 64
count = 3
[[layers]]
name = "a again"
c = 32
h = 20
w = 20
k = 64
"""


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def tiny_network(tmp_path, monkeypatch):
    (tmp_path / "networks").mkdir()
    (tmp_path / "networks" / "tiny.toml").write_text(TINY)
    real = catalog.load_network
    monkeypatch.setattr(catalog, "load_network", lambda name, root=tmp_path: real(name, root))
    return "tiny"


def test_distinct_layers_merge_repeated_shapes():
    a, b = Layer(2, 32, 20, 20, 64, name="net/a"), Layer(2, 32, 16, 16, 64, name="net/a")
    layers = distinct_layers([(a, 2), (b, 3), (Layer(2, 32, 20, 20, 64, name="net/c"), 1)])
    assert [(nl.folder, nl.count, nl.names) for nl in layers] == [("a", 3, ["net/a", "net/c"]), ("a-2", 3, ["net/a"])]


@pytest.mark.slow
def test_network_search_on_a_local_dask_cluster(tmp_path, capsys, tiny_network):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "out"
    rc, text, err = run(capsys, "search", "--network", tiny_network, *SPACE, "--method", "grid", "--quiet",
                        "--scheduler", "local:2", "--out", out)
    assert rc == 0, err
    doc = json.loads((out / "network_summary.json").read_text())
    rows = {r["layer"]: r for r in doc["layers"]}
    assert [(k, r["count"]) for k, r in rows.items()] == [("a", 3), ("b", 3)]
    for name, r in rows.items():
        table = json.loads((out / name / "evaluations.json").read_text())["evaluations"]
        # every build is fused here, so the best is the fastest fused one, set against its non-fused twin
        assert (r["best"], r["best_us"]) == (table[0]["label"], table[0]["time_us"]) == ("fused F4 static generic",
                                                                                       table[0]["fused_us"])
        assert r["fused_us"] == r["best_us"] and r["nonfused_us"] == table[0]["nonfused_us"]
        assert r["speedup"] == pytest.approx(r["nonfused_us"] / r["fused_us"])
        assert (out / name / "best.json").exists() and (out / name / "study.journal").exists()
    total = sum(r["count"] * r["best_us"] for r in rows.values())
    assert doc["totals"]["best_us"] == doc["totals"]["fused_us"] == pytest.approx(total)
    assert doc["totals"]["complete"]
    assert doc["totals"]["speedup"] == pytest.approx(doc["totals"]["nonfused_us"] / total)
    assert "total (x count)" in text and (out / "network_summary.txt").read_text().startswith("tiny on h200")
    rc, sim, _ = run(capsys, "simulate", "--mapping", out / "b" / "best.json", "--json")
    raw = json.loads((out / "b" / "evaluations.json").read_text())["evaluations"][0]["predicted_us"]
    assert rc == 0 and json.loads(sim)["fused_us"] == pytest.approx(raw, rel=1e-9)


def test_search_attaches_to_a_running_scheduler(tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(processes=False, protocol="tcp", n_workers=1, threads_per_worker=2,
                                  dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        rc, text, err = run(capsys, "search", "--shape", "2,32,20,20,64", *SPACE, "--method", "grid", "--quiet",
                            "--scheduler", cluster.scheduler_address, "--out", tmp_path / "out")
        assert rc == 0, err
        assert len(cluster.scheduler_info["workers"]) == 1  # the search left the cluster running
    assert "2 evaluations" in text and (tmp_path / "out" / "best.json").exists()


def test_a_network_search_of_nonfused_builds_only_has_no_speedup(tmp_path, capsys, tiny_network):
    out = tmp_path / "out"
    rc, text, err = run(capsys, "search", "--network", tiny_network, "--launch", "nonfused", "--gemm", "generic",
                        "--variant", "2", "--method", "random", "--budget", "2", "--quiet", "--jobs", "1", "--out", out)
    assert rc == 0, err
    doc = json.loads((out / "network_summary.json").read_text())
    assert all(r["best"] == "nonfused F2 generic" and r["speedup"] is None for r in doc["layers"])
    assert doc["totals"]["speedup"] is None and "total (x count)" in text
