"""`megasim search` over the whole decision space: the launch, the variant, the mode and the GEMM body are
axes of one search (`megasim.contract.build.AXES`), each searched unless pinned (CPU only).

An unpinned search reaches every build `simulate --all-builds` ranks, at the same predictions; a non-fused
build has no mode and no mapping, so every sample of it is its one canonical point, simulated once; a best
that is a warp or a non-fused build round-trips through best.json and `simulate --mapping`; and the
simulator refuses exactly the builds the CUDA kernels refuse (`check_kernel_build`).
"""
import json
import random

import pytest

from megasim.app.catalog import load_gpu, partition_for
from megasim.app.cli import main
from megasim.app.pick import rank_builds
from megasim.app.search import objective
from megasim.app.search.objective import Problem
from megasim.app.search.outputs import fusion_margin, rows
from megasim.app.search.runner import SearchConfig, run_search
from megasim.app.search.space import build_space, reject_reason
from megasim.contract.build import AXES, discrete_builds
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.modes import DEFAULT_POLICY, MODES
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import warp_partition
from megasim.engine.interpreter import SimpyInterpreter
from megasim.gpu.backend import KernelConfig, config_header

pytest.importorskip("optuna")

# K = 128 and C a multiple of 16: the warp body tiles this layer's partition widened to 128 output channels
# per GEMM task; N_G >= 4 task groups in every variant, so the paper's default M = 4 is legal in each.
LAYER = Layer(8, 64, 28, 28, 128, name="small")
DEFAULT_MAPPING = {"dig": (512,), "dgo": (512,), "m": (4,)}  # the paper strategy's defaults, pinned


@pytest.fixture(scope="module")
def gpu():
    return load_gpu("h200")


@pytest.fixture(scope="module")
def base():
    return partition_for(LAYER, "h200")


@pytest.fixture(scope="module")
def unpinned(gpu, base):
    """A grid search of every launch, variant, mode and GEMM body, on the default mapping."""
    space = build_space("paper", base, DEFAULT_MAPPING, LAYER)
    result = run_search(Problem(LAYER, WinogradVariant(4), gpu), space, SearchConfig(progress=False, method="grid"))
    return space, rows(result, space)


def test_an_unpinned_search_evaluates_every_build_of_the_layer(unpinned, gpu, base):
    space, table = unpinned
    # every axis but the precision, which `search.command.precision_space` opens where the model predicts it
    assert [p.name for p in space.searched] == [a for a in AXES if a != "precision"]
    assert space.size == 2 * 3 * 3 * 2
    ok = [r for r in table if r["status"] == "ok"]
    assert len(ok) == len(table) == space.size
    # both launches and both GEMM bodies, and every build `simulate --all-builds` ranks, named by its label
    every = {b.label for b in discrete_builds(LAYER, base)}
    assert {r["label"] for r in ok} == every and len(every) == 24
    assert {r["launch"] for r in ok} == {"fused", "nonfused"} and {r["gemm"] for r in ok} == {"generic", "warp"}
    assert all(r["label"] == (f"fused F{r['variant']} {r['mode']} {r['gemm']}" if r["launch"] == "fused"
                              else f"nonfused F{r['variant']} {r['gemm']}") for r in ok)
    # each row names the partition its build ran on: the warp body's widened one, else the layer's own
    wide = warp_partition(LAYER, base)
    assert wide.gemm_k_per_task == 128 != base.gemm_k_per_task
    for r in ok:
        assert Partition(**{f: r[f] for f in base.to_dict()}) == (wide if r["gemm"] == "warp" else base)
    # the same predictions as `simulate --all-builds` (default mapping: nothing discounted)
    ranked = {x.build.label: x.time_us for x in rank_builds(LAYER, base, gpu, lambda g: make(g, "paper"),
                                                            DEFAULT_POLICY)}
    assert all(r["time_us"] == pytest.approx(ranked[r["label"]], rel=1e-12) for r in ok)
    # a non-fused row is its own non-fused time; a fused row sets its non-fused twin (same variant, partition
    # and body) beside it
    nonfused = {(r["variant"], r["gemm"]): r["time_us"] for r in ok if r["launch"] == "nonfused"}
    for r in ok:
        if r["launch"] == "nonfused":
            assert r["fused_us"] is None and r["speedup_vs_nonfused"] is None and r["nonfused_us"] == r["time_us"]
        else:
            assert r["fused_us"] == r["time_us"] and r["nonfused_us"] == nonfused[r["variant"], r["gemm"]]
            assert r["speedup_vs_nonfused"] == pytest.approx(r["nonfused_us"] / r["time_us"])
    # the fusion margin sets the fastest fused build against the fastest non-fused one
    fastest = {launch: min((r for r in ok if r["launch"] == launch), key=lambda r: r["time_us"])
               for launch in ("fused", "nonfused")}
    m = fusion_margin(table)
    assert (m["fused"], m["nonfused"]) == (fastest["fused"]["label"], fastest["nonfused"]["label"])
    assert m["margin"] == pytest.approx(fastest["nonfused"]["time_us"] / fastest["fused"]["time_us"] - 1)
    assert table[0]["rank"] == 1 and table[0]["time_us"] == min(r["time_us"] for r in ok)


def test_a_nonfused_build_is_one_canonical_point_simulated_once(gpu, base, monkeypatch):
    """A non-fused build has no scheduling mode and no mapping: a sample with any mode or mapping options
    stands for its canonical point (static, the strategy's defaults), simulated once and never in another
    mode or mapping; the other samples are answered from the study."""
    space = build_space("paper", base, {"launch": ("fused", "nonfused"), "variant": (4,), "gemm": ("generic",),
                                        "dig": (0, 512), "dgo": (512,), "m": (4,)}, LAYER)
    defaults = dict(space.default_mapping)
    sampled = {"launch": "nonfused", "mode": "ready_queue", "dig": 0}
    assert space.canonical(sampled) == {"launch": "nonfused", "mode": "static", "dig": 512}
    assert reject_reason(space, sampled, LAYER, gpu) is None
    real, simulated = objective.evaluate, []

    def spy(problem, part, opts):
        simulated.append((problem.launch, problem.mode, opts))
        return real(problem, part, opts)

    monkeypatch.setattr(objective, "evaluate", spy)
    result = run_search(Problem(LAYER, WinogradVariant(4), gpu), space, SearchConfig(progress=False, method="grid"))
    table = rows(result, space)
    assert [(mode, opts) for launch, mode, opts in simulated if launch == "nonfused"] == [("static", defaults)]
    samples = [t for t in result.trials if t.params["launch"] == "nonfused"]
    assert len(samples) == len(MODES) * 2 and sum(t.user_attrs.get("cached", False) for t in samples) == 5
    assert {(t.params["mode"], t.params["dig"]) for t in samples} == {(m, d) for m in MODES for d in (0, 512)}
    nf = [r for r in table if r["launch"] == "nonfused"]
    assert all(r["status"] == "ok" and r["label"] == "nonfused F4 generic" for r in nf)
    assert {(r["mode"], r["dig"], r["time_us"]) for r in nf} == {("static", 512, nf[0]["time_us"])}
    # the fused samples are each their own build and mapping (the grid's paper-default point may be simulated
    # twice: as the reference, a job of its own, and as its grid point)
    assert {(mode, opts["dig"]) for launch, mode, opts in simulated if launch == "fused"} == {
        (m, d) for m in MODES for d in (0, 512)}


def test_a_nonfused_build_is_legal_wherever_its_kernels_build(gpu):
    layer = Layer(2, 64, 28, 28, 128)  # N_G = 2 task groups in F(4x4), 1 in F(6x6): fewer than the default M = 4
    base = partition_for(layer, "h200")
    space = build_space("paper", base, None, layer)
    assert {b.label for b in discrete_builds(layer, base) if b.launch == "nonfused"} == {
        f"nonfused F{v} {g}" for v in (2, 4, 6) for g in ("generic", "warp")}  # the kernels build each
    refused = {(v, g): reject_reason(space, {"launch": "nonfused", "variant": v, "mode": "static", "gemm": g,
                                             **dict(space.default_mapping)}, layer, gpu)
               for v in (2, 4, 6) for g in ("generic", "warp")}
    assert refused == {k: None for k in refused}


# --- best.json of a warp or a non-fused best, through `simulate --mapping` --------------------------------------

def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("shape, flags, label", [
    # the fused warp body, where a non-default mapping is predicted faster than the default one: best.json's
    # predicted_us counts only the profile's share of that gain, its raw_predicted_us is the simulation's
    ("4,128,28,28,128", ["--launch", "fused", "--gemm", "warp", "--variant", "4", "--mode", "static",
                         "--space", "dig=512", "--space", "dgo=0,512", "--space", "m=1,4"], "fused F4 static warp"),
    # the non-fused kernels with the warp body, each variant
    ("8,64,28,28,128", ["--launch", "nonfused", "--gemm", "warp", "--mode", "static", "--space", "dig=512",
                        "--space", "dgo=512", "--space", "m=4"], "nonfused F"),
], ids=["fused-warp", "nonfused-warp"])
def test_best_json_of_a_warp_or_nonfused_best_round_trips(tmp_path, capsys, shape, flags, label):
    out = tmp_path / "out"
    rc, text, err = run(capsys, "search", "--shape", shape, "--quiet", "--jobs", "1", *flags, "--method", "grid",
                        "--out", out)
    assert rc == 0, err
    table = json.loads((out / "evaluations.json").read_text())["evaluations"]
    top, best = table[0], json.loads((out / "best.json").read_text())
    assert top["label"].startswith(label) and f"best: {top['label']}, " in text
    assert (best["launch"], best["variant"], best["mode"], best["gemm"]) == (top["launch"], top["variant"],
                                                                            top["mode"], "warp")
    assert best["partition"]["gemm_k_per_task"] == 128  # the warp body's own partition
    assert best["search"]["predicted_us"] == top["time_us"] and best["search"]["label"] == top["label"]
    rc, sim, err = run(capsys, "simulate", "--mapping", out / "best.json", "--json")
    assert rc == 0, err
    sim = json.loads(sim)
    assert sim["gemm"] == "warp" and sim["partition"] == best["partition"]
    built = sim["builds"][best["launch"]]
    assert {k: built[k] for k in ("launch", "variant", "mode", "gemm")} == {k: best[k] for k in
                                                                              ("launch", "variant", "mode", "gemm")}
    assert built["partition"] == best["partition"]
    if best["launch"] == "fused":
        assert "fusion margin: " in text and "nonfused twin of fused F4 static warp" in text
        assert sim["fused_us"] == pytest.approx(best["search"]["raw_predicted_us"], rel=1e-9)
        assert best["search"]["raw_predicted_us"] == top["predicted_us"] < top["time_us"] < top["default_mapping_us"]
        assert best["params"] != dict(dig=512, dgo=512, m=4)  # not the strategy's default mapping
    else:
        assert "fusion margin" not in text and top["fused_us"] is None
        assert sim["nonfused_us"] == pytest.approx(best["search"]["predicted_us"], rel=1e-9)
        # each variant in both precisions: the H200's profile predicts 3xTF32, so the search opens that axis
        assert {r["label"] for r in table if r["status"] == "ok"} == {
            f"nonfused F{m} warp{p}" for m in (2, 4, 6) for p in ("", " 3xtf32")}


# --- the simulator refuses what the kernels refuse ---------------------------------------------------------

def test_the_simulator_refuses_exactly_the_builds_the_kernels_refuse():
    """Random builds over wide value sets, illegal ones included: the SimPy interpreter raises exactly where
    `gpu.backend.config_header` (what the CUDA build writes) refuses."""
    gpu, layer, rng = load_gpu("h200"), Layer(1, 32, 12, 12, 128), random.Random(20261128)
    compared, outcomes = 0, set()
    for _ in range(60):
        launch, v, mode, g = (rng.choice(AXES[axis]) for axis in ("launch", "variant", "mode", "gemm"))
        fields = {"tiles_per_group": rng.choice((16, 32, 64, 128)), "gemm_k_per_task": rng.choice((16, 32, 64, 128)),
                  "gemm_mats_per_task": rng.choice((1, 2, 4)), "threads": rng.choice((64, 96, 128, 256))}
        try:
            part = Partition(**fields)
        except MegasimError:
            continue
        variant = WinogradVariant(v)
        try:
            config_header(KernelConfig(layer, variant, part, gemm=g))
            kernels = None
        except MegasimError as exc:
            kernels = str(exc)
        graph = build_graph(layer, variant, part)
        mapping = make(graph, "paper", m=1) if launch == "fused" else None
        try:
            SimpyInterpreter(gpu, gemm=g).run(graph, mapping, RunConfig(launch=launch, mode=mode))
            simulated = None
        except MegasimError as exc:
            simulated = str(exc)
        assert (simulated is None) == (kernels is None), (launch, v, mode, g, part, kernels, simulated)
        compared += 1
        outcomes.add(kernels is None)
    assert compared >= 20 and outcomes == {True, False}


def test_a_budget_below_the_discrete_builds_still_sees_every_non_fused_build(tmp_path):
    """The discrete builds come first, the non-fused ones right after the default: with 20 evaluations of
    ResNet-2's 36 builds (24 in FP32, and the 12 warp ones in 3xTF32 too: the H200's profile predicts it), the
    pick is the fastest non-fused warp build, not a fused one 3% slower."""
    import json

    from megasim.app.cli import main
    assert main(["search", "--layer", "ResNet-2", "--budget", "20", "--out", str(tmp_path / "s"), "--quiet"]) == 0
    rows = json.loads((tmp_path / "s" / "evaluations.json").read_text())["evaluations"]
    assert {r["label"] for r in rows if r["label"].startswith("nonfused")} == {
        f"nonfused F{m} {g}" for m in (2, 4, 6) for g in ("generic", "warp", "warp 3xtf32")}
    best = json.loads((tmp_path / "s" / "best.json").read_text())
    assert best["launch"] == "nonfused"
