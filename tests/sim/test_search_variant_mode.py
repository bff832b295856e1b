"""The search's problem parameters: the Winograd variant and the scheduling mode, searched unless pinned,
carried by best.json and taken from a mapping file by `simulate` (a file without a mode is static)."""
import json

import pytest

from megasim.app.cli import main
from megasim.app.search import hardware
from megasim.app.search.objective import Problem
from megasim.app.search.space import build_space
from megasim.app.catalog import load_gpu
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import mode_of, save_mapping
from megasim.contract.problem import Layer, Partition, WinogradVariant

pytest.importorskip("optuna")

SHAPE = ["--shape", "2,32,20,20,32", "--quiet", "--jobs", "1"]
# One mapping and one partition, every one of the nine (variant, mode) pairs legal on this layer.
FIXED_BUT_DIG = ["--space", "dgo=0", "--space", "m=1", "--space", "tiles_per_group=32",
                 "--space", "gemm_k_per_task=32", "--space", "gemm_mats_per_task=1", "--space", "threads=256"]
FIXED = ["--space", "dig=0", *FIXED_BUT_DIG]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def evaluations(out):
    return json.loads((out / "evaluations.json").read_text())


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """An unpinned TPE search of the nine (variant, mode) points, with more budget than points."""
    out = tmp_path_factory.mktemp("searched")
    assert main(["search", *SHAPE, *FIXED, "--budget", "12", "--out", str(out)]) == 0
    return out


def test_an_unpinned_search_explores_variants_and_modes(searched):
    doc = evaluations(searched)
    ok = [r for r in doc["evaluations"] if r["status"] == "ok"]
    assert len(doc["evaluations"]) == 12 and len(ok) == 12
    assert len({r["variant"] for r in ok}) > 1 and len({r["mode"] for r in ok}) > 1
    assert (doc["variants"], doc["modes"]) == ([2, 4, 6], ["static", "persistent", "ready_queue"])
    assert "/F2,4,6/static,persistent,ready_queue/" in doc["study"]
    # TPE repeats itself on nine points: the repeats are answered from the study, with the first answer.
    first = {}
    for r in sorted(ok, key=lambda r: r["trial"]):
        first.setdefault((r["variant"], r["mode"]), r["fused_us"])
        assert r["fused_us"] == first[r["variant"], r["mode"]]
    assert sum(r["cached"] for r in ok) == 12 - len(first) > 0
    # Non-fused is the row's own variant (one partition here), whatever its mode: like with like.
    nonfused = {r["variant"]: r["nonfused_us"] for r in ok}
    assert all(r["nonfused_us"] == nonfused[r["variant"]] for r in ok) and len(set(nonfused.values())) > 1
    assert all(r["speedup_vs_nonfused"] == pytest.approx(r["nonfused_us"] / r["fused_us"]) for r in ok)


def test_pinned_variant_and_mode_stay_fixed_in_a_study_of_their_own(searched, tmp_path, capsys):
    storage = f"sqlite:///{searched / 'study.db'}"  # the unpinned study's storage: the names must not collide
    rc, text, _ = run(capsys, "search", *SHAPE, *FIXED_BUT_DIG, "--space", "dig=0,512", "--variant", "4",
                      "--mode", "static", "--method", "grid", "--storage", storage, "--out", str(tmp_path))
    assert rc == 0 and "variant=4 mode=static dig=" in text
    doc = evaluations(tmp_path)
    assert {(r["variant"], r["mode"]) for r in doc["evaluations"]} == {(4, "static")}
    assert len(doc["evaluations"]) == 2 and "/F4/static/" in doc["study"]
    assert doc["study"] != evaluations(searched)["study"]


def test_best_json_carries_variant_and_mode_and_simulate_reproduces_it(searched, capsys):
    best, row = json.loads((searched / "best.json").read_text()), evaluations(searched)["evaluations"][0]
    assert (best["variant"], best["mode"]) == (row["variant"], row["mode"])
    rc, out, _ = run(capsys, "simulate", "--mapping", str(searched / "best.json"), "--json")
    assert rc == 0 and json.loads(out)["mode"] == best["mode"]
    assert json.loads(out)["fused_us"] == row["fused_us"] == best["search"]["predicted_fused_us"]


def test_a_pinned_mode_reaches_best_json_and_simulate(tmp_path, capsys):
    rc, _, _ = run(capsys, "search", *SHAPE, *FIXED, "--variant", "6", "--mode", "ready_queue",
                   "--out", str(tmp_path), "--budget", "1", "--storage", "sqlite:///:memory:")
    best = tmp_path / "best.json"
    doc = json.loads(best.read_text())
    assert rc == 0 and (doc["variant"], doc["mode"]) == (6, "ready_queue")
    predicted = evaluations(tmp_path)["evaluations"][0]["fused_us"]
    by_file = json.loads(run(capsys, "simulate", "--mapping", str(best), "--json")[1])
    static = json.loads(run(capsys, "simulate", "--mapping", str(best), "--mode", "static", "--json")[1])
    assert (by_file["mode"], by_file["fused_us"]) == ("ready_queue", predicted)
    assert static["mode"] == "static" and static["fused_us"] != predicted  # --mode overrides the file's


def test_a_mapping_file_without_a_mode_is_static(tmp_path, capsys):
    graph = build_graph(Layer(2, 32, 20, 20, 32, name="custom"), WinogradVariant(2))
    mapping = make(graph, "paper", m=1)
    old, static = tmp_path / "old.json", save_mapping(tmp_path / "static.json", graph, mapping)
    save_mapping(old, graph, mapping, mode="persistent")
    doc = json.loads(old.read_text())
    del doc["mode"]  # as written before files carried a mode
    old.write_text(json.dumps(doc))
    assert mode_of(doc, "old.json") == "static"
    by_old, by_static = (json.loads(run(capsys, "simulate", "--mapping", str(p), "--json")[1]) for p in (old, static))
    assert by_old["mode"] == "static" and by_old["fused_us"] == by_static["fused_us"]
    doc["mode"] = "eager"
    old.write_text(json.dumps(doc))
    rc, _, err = run(capsys, "simulate", "--mapping", str(old))
    assert rc == 2 and "unknown scheduling mode 'eager'" in err and err.count("\n") == 1


@pytest.mark.parametrize("extra, message", [
    (["--mode", "eager"], "invalid choice: 'eager'"),
    (["--variant", "5"], "m=5"),
    (["--space", "mode=static,eager"], "unknown scheduling mode 'eager'"),
    (["--variant", "4", "--space", "variant=2,4"], "--variant and --space variant"),
], ids=["mode", "variant", "space-mode", "pinned-twice"])
def test_bad_variant_or_mode_is_one_line_and_exit_2(tmp_path, capsys, extra, message):
    rc, _, err = run(capsys, "search", *SHAPE, "--out", str(tmp_path), *extra)
    assert rc == 2 and message in err and err.count("\n") == 1


def test_validate_top_measures_each_candidate_in_its_own_variant_and_mode(monkeypatch):
    seen = {}

    def fake_bench_layer(layer, args, bandwidth, **kw):
        seen.update(variant=args.variant, **kw)
        timing = {"median_us": 1.0, "p10_us": 0.9, "p90_us": 1.1}
        return {"timings": {"fused": {**timing, "median_us": 9.0}, "fused-ready_queue": timing,
                            "nonfused-graph": timing},
                "checks": {"fused": {"rel_err": 1.0}, "fused-ready_queue": {"rel_err": 2e-5}}}

    monkeypatch.setattr("megasim.app.bench.bench_layer", fake_bench_layer)
    space = build_space("paper", Partition(tiles_per_group=32))
    problem = Problem(Layer(2, 32, 20, 20, 32), WinogradVariant(4), load_gpu("h200"))
    point = {"variant": 6, "mode": "ready_queue", "dig": 0, "dgo": 0, "m": 1, "tiles_per_group": 32,
             "gemm_k_per_task": 32, "gemm_mats_per_task": 1, "threads": 256}
    got = hardware.measure(problem, space, point, 20, 1e12)
    assert seen["variant"] == 6 and seen["variants"] is False
    assert got["measured_fused_us"] == 1.0 and got["rel_err"] == 2e-5 and got["within_tolerance"]
