"""The search's problem parameters: the Winograd variant and the scheduling mode, searched unless pinned,
carried by best.json and taken from a mapping file by `simulate` (a file without a mode is static); and
`--validate-top`, which measures the search's picks beside every build of the layer. The launch and the GEMM
body, the other two axes of a build, are pinned here (fused, generic): tests/sim/test_search_builds.py
searches them."""
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
# One mapping, one partition, fused with the generic GEMM body: every one of the nine (variant, mode) pairs legal
# on this layer.
FIXED_BUT_DIG = ["--launch", "fused", "--gemm", "generic", "--space", "dgo=0", "--space", "m=1",
                 "--space", "tiles_per_group=32", "--space", "gemm_k_per_task=32", "--space", "gemm_mats_per_task=1",
                 "--space", "threads=256"]
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
    assert (doc["launches"], doc["gemms"]) == (["fused"], ["generic"])
    assert "/fused/F2,4,6/static,persistent,ready_queue/generic/" in doc["study"]
    assert all(r["label"] == f"fused F{r['variant']} {r['mode']} generic" and r["fused_us"] == r["time_us"] for r in ok)
    # TPE repeats itself on nine points: the repeats are answered from the study, with the first answer.
    first = {}
    for r in sorted(ok, key=lambda r: r["trial"]):
        first.setdefault((r["variant"], r["mode"]), r["time_us"])
        assert r["time_us"] == first[r["variant"], r["mode"]]
    assert sum(r["cached"] for r in ok) == 12 - len(first) > 0
    # Non-fused is the row's own variant (one partition here), whatever its mode: like with like.
    nonfused = {r["variant"]: r["nonfused_us"] for r in ok}
    assert all(r["nonfused_us"] == nonfused[r["variant"]] for r in ok) and len(set(nonfused.values())) > 1
    assert all(r["speedup_vs_nonfused"] == pytest.approx(r["nonfused_us"] / r["fused_us"]) for r in ok)


def test_pinned_variant_and_mode_stay_fixed_in_a_study_of_their_own(searched, tmp_path, capsys):
    storage = f"sqlite:///{searched / 'study.db'}"  # the unpinned study's storage: the names must not collide
    rc, text, _ = run(capsys, "search", *SHAPE, *FIXED_BUT_DIG, "--space", "dig=0,512", "--variant", "4",
                      "--mode", "static", "--method", "grid", "--storage", storage, "--out", str(tmp_path))
    assert rc == 0 and "launch=fused variant=4 mode=static gemm=generic precision=fp32 dig=" in text
    doc = evaluations(tmp_path)
    assert {(r["variant"], r["mode"]) for r in doc["evaluations"]} == {(4, "static")}
    assert len(doc["evaluations"]) == 2 and "/fused/F4/static/generic/" in doc["study"]
    assert doc["study"] != evaluations(searched)["study"]


def test_best_json_carries_variant_and_mode_and_simulate_reproduces_it(searched, capsys):
    best, row = json.loads((searched / "best.json").read_text()), evaluations(searched)["evaluations"][0]
    assert (best["launch"], best["variant"], best["mode"], best["gemm"]) == ("fused", row["variant"], row["mode"],
                                                                            "generic")
    rc, out, _ = run(capsys, "simulate", "--mapping", str(searched / "best.json"), "--json")
    assert rc == 0 and json.loads(out)["mode"] == best["mode"]
    assert row["time_us"] == best["search"]["predicted_us"]  # the ranking value
    assert json.loads(out)["fused_us"] == row["predicted_us"] == best["search"]["raw_predicted_us"]  # the simulation


def test_a_pinned_mode_reaches_best_json_and_simulate(tmp_path, capsys):
    rc, _, _ = run(capsys, "search", *SHAPE, *FIXED, "--variant", "6", "--mode", "ready_queue",
                   "--out", str(tmp_path), "--budget", "1")
    best = tmp_path / "best.json"
    doc = json.loads(best.read_text())
    assert rc == 0 and (doc["variant"], doc["mode"]) == (6, "ready_queue")
    predicted = evaluations(tmp_path)["evaluations"][0]["predicted_us"]  # the simulation, before any discount
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
    (["--variant", "5"], "unknown variant 5; known: 2, 4, 6"),
    (["--space", "mode=static,eager"], "unknown mode 'eager'; known: static, persistent, ready_queue"),
    (["--variant", "4", "--space", "variant=2,4"], "--variant and --space variant"),
    (["--launch", "eager"], "invalid choice: 'eager'"),
    (["--gemm", "tensor"], "invalid choice: 'tensor'"),
    (["--space", "launch=fused,eager"], "unknown launch 'eager'; known: fused, nonfused"),
    (["--space", "gemm=warp,tensor"], "unknown gemm 'tensor'; known: generic, warp"),
    (["--gemm", "warp", "--space", "gemm=generic,warp"], "--gemm and --space gemm"),
], ids=["mode", "variant", "space-mode", "pinned-twice", "launch", "gemm", "space-launch", "space-gemm",
        "gemm-pinned-twice"])
def test_bad_variant_or_mode_is_one_line_and_exit_2(tmp_path, capsys, extra, message):
    rc, _, err = run(capsys, "search", *SHAPE, "--out", str(tmp_path), *extra)
    assert rc == 2 and message in err and err.count("\n") == 1


def test_validate_top_measures_each_candidate_in_its_own_variant_and_mode(tmp_path, capsys, monkeypatch):
    """The top rows are measured first (the search's pick first of all), each as its own build, then every
    discrete build of the layer not already listed; regret is against the fastest accurate measurement (a
    faster inaccurate one does not count), and best.json is rewritten to name that build, which `simulate`
    then predicts as the candidate's prediction said."""
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import partition_for
    from megasim.app.search.space import reject_reason
    from megasim.contract.build import discrete_builds, with_partition
    from megasim.contract.resources import warp_partition

    layer = Layer(2, 64, 28, 28, 128, name="warp-tiled")  # K = 128: the warp body tiles its widened partition
    base, gpu = partition_for(layer, "h200"), gpu_for_simulation("h200")[0]
    space = build_space("paper", base, {"dig": (0, 512), "dgo": (0, 512), "m": (1, 4)}, layer)
    problem = Problem(layer, WinogradVariant(4), gpu)
    pick = {"launch": "fused", "variant": 6, "mode": "ready_queue", "gemm": "warp", "dig": 0, "dgo": 0, "m": 1}
    second = {"launch": "fused", "variant": 2, "mode": "persistent", "gemm": "generic", "dig": 512, "dgo": 512, "m": 4}
    assert all(reject_reason(space, p, layer, gpu) is None for p in (pick, second))
    top = [{"rank": i, **space.complete(p), "time_us": t} for i, (p, t) in enumerate(((pick, 3.0), (second, 4.0)), 1)]

    measured = {"predicted #1: fused F6 ready_queue warp": 10.0, "nonfused F2 generic": 5.0}
    inaccurate = "fused F4 static generic"  # measured fastest of all, but its output is wrong
    calls = []

    def fake_time_builds(layer_, candidates, reps, **options):  # options: how to time them (compile workers)
        calls.append((layer_, list(candidates), reps))
        rows = []
        for c in candidates:
            us = 1.0 if c.label == inaccurate else measured.get(c.label, 20.0)
            rows.append({"label": c.label, **c.build.to_dict(), "predicted_us": c.predicted_us, "measured_us": us,
                         "rel_err": 0.5 if c.label == inaccurate else 1e-6, "accurate": c.label != inaccurate,
                         "prediction_error": c.predicted_us / us - 1})
        return rows

    monkeypatch.setattr(hardware, "require_gpu", lambda: None)
    monkeypatch.setattr(hardware, "time_builds", fake_time_builds)
    monkeypatch.setattr("megasim.gpu.backend.measurement_header", lambda: {"device": "fake"})
    doc = hardware.validate_top(problem, space, top, tmp_path, 20, {"gpu": "h200", "study": "s"})

    ((got_layer, cands, reps),) = calls
    assert got_layer == layer and reps == 20
    # the top rows first, in rank order, each in its own build, partition and mapping
    assert [c.label for c in cands[:2]] == ["predicted #1: fused F6 ready_queue warp",
                                            "predicted #2: fused F2 persistent generic"]
    assert cands[0].build.partition == warp_partition(layer, base) != base and cands[0].build.gemm == "warp"
    assert dict(cands[0].options) == {"dig": 0, "dgo": 0, "m": 1} and cands[0].predicted_us == 3.0
    # then every discrete build of the layer at its own partition, the second row's (the same build, the same
    # default mapping) not twice
    rest = [c.build for c in cands[2:]]
    every = [with_partition(b, layer, base) for b in discrete_builds(layer, base)]
    assert {b.gemm for b in every} == {"generic", "warp"} and len(set(every)) == 24
    assert len(rest) == len(set(rest)) == 23 and set(rest) | {cands[1].build} == set(every)
    assert all(c.options == (() if c.build.launch == "nonfused" else (("dgo", 512), ("dig", 512), ("m", 4)))
               for c in cands[1:])
    # regret against the fastest accurate measurement: 10 / 5 - 1, not 10 / 1 - 1
    assert (doc["pick"], doc["pick_measured_us"]) == ("predicted #1: fused F6 ready_queue warp", 10.0)
    assert (doc["fastest"], doc["fastest_measured_us"]) == ("nonfused F2 generic", 5.0)
    assert doc["regret"] == pytest.approx(1.0) and doc["pick_prediction_error"] == pytest.approx(3.0 / 10 - 1)
    assert json.loads((tmp_path / "validation.json").read_text())["regret"] == pytest.approx(1.0)
    assert "regret of the search's pick: 100.0%" in hardware.format_validation(doc)
    # best.json names the fastest measured build, with its prediction and its measurement
    best = json.loads((tmp_path / "best.json").read_text())
    chosen = next(c for c in cands if c.label == "nonfused F2 generic")
    assert (best["launch"], best["variant"], best["mode"], best["gemm"]) == ("nonfused", 2, "static", "generic")
    assert best["partition"] == base.to_dict() and best["measured"]["us"] == 5.0
    assert best["search"]["predicted_us"] == chosen.predicted_us and best["search"]["gpu"] == "h200"
    rc, out, _ = run(capsys, "simulate", "--mapping", str(tmp_path / "best.json"), "--json")
    assert rc == 0 and json.loads(out)["nonfused_us"] == pytest.approx(chosen.predicted_us, rel=1e-9)
