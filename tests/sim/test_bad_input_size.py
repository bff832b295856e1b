"""Graphs too big to build or too slow to simulate: one line on stderr, exit code 2, within seconds.

One case is one line of `CASES`: an id, the command (`{tmp}` is the test's folder), the environment it
runs under, and a phrase the message must hold. The machine is pinned to 64 GB of free memory, so a
case fails for its own reason wherever the suite runs. Every command names an output under
`{tmp}/out`, and the folder must stay empty. The CLI runs in-process under an alarm.
"""
import json

import pytest

import megasim.contract.size as size
from megasim.app.catalog import SCENARIOS
from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.ranges import DataRanges

from .conftest import alarm_after, assert_refused

pytest.importorskip("optuna")

FREE = 64 * 10**9
TRACE = " --trace {tmp}/out/t.json"
SEARCH = " --quiet --jobs 1 --launch fused --variant 4 --mode static --gemm generic --out {tmp}/out --budget "
VALIDATE = "validate --profile {tmp}/p.toml --measurements {tmp}/runs.json --out {tmp}/out --json"
SLOW = {"MEGASIM_MAX_SIM_SECONDS": "0.001"}
PROFILE = (SCENARIOS / "calibrations" / "h200.toml").read_text()
RUNS = json.loads((SCENARIOS / "calibrations" / "raw" / "h200_runs.json").read_text())
RUN = next(r for r in RUNS["runs"] if r["layer"]["name"] == "ResNet-3")


def runs_of(n, c, h, w, k) -> dict:
    """A profile and a runs file of the ResNet-3 run and one of this shape."""
    big = {**RUN, "layer": {**RUN["layer"], "n": n, "c": c, "h": h, "w": w, "k": k}}
    return {"p.toml": PROFILE, "runs.json": json.dumps({"header": RUNS["header"], "runs": [RUN, big]})}


CASES = [
    # memory: arrays that grow with C x K or K x K, not with the task count
    ("cxk-gemm-reads", "simulate --shape 64,65536,28,28,65536" + TRACE, {}, {},
     "3.71 billion L2 accesses over 6.48 million regions; building them needs about 209 GB (the GEMM reads alone"),
    ("kxk-filter-overlap", "simulate --shape 1,1,4,4,1048576 --partition filter_k_per_task=1" + TRACE, {}, {},
     "(the filter-by-GEMM block overlap alone"),
    # time: fits in memory, but would run for minutes with no output
    ("4m-tasks", "simulate --shape 4096,128,112,112,128" + TRACE, {}, {}, "would take about 146 s"),
    ("2m-tasks", "simulate --shape 2048,128,112,112,128 --json", {}, {}, "past the 60 s limit"),
    ("one-tile-groups", "simulate --layer VGG-1 --partition tiles_per_group=1" + TRACE, {}, {}, "past the 60 s limit"),
    ("limit-lowered", "simulate --layer ResNet-2" + TRACE, SLOW, {}, "past the 0.001 s limit"),
    ("limit-not-a-number", "simulate --layer ResNet-2" + TRACE, {"MEGASIM_MAX_SIM_SECONDS": "soon"}, {},
     "MEGASIM_MAX_SIM_SECONDS must be a number"),
    ("limit-negative", "simulate --layer ResNet-2" + TRACE, {"MEGASIM_MAX_SIM_SECONDS": "-1"}, {},
     "MEGASIM_MAX_SIM_SECONDS must be a number"),
    # the other commands build through the same guard
    ("network-one-tile-groups", "simulate --network vgg16 --partition tiles_per_group=1 --plot {tmp}/out/n.png",
     {}, {}, "VGG-16/conv1_1"),
    ("validate-cxk", VALIDATE, {}, runs_of(64, 65536, 28, 28, 65536), "the GEMM reads alone"),
    ("validate-4m-tasks", VALIDATE, {}, runs_of(4096, 128, 112, 112, 128), "would take about 146 s"),
    ("search-cxk", "search --shape 64,65536,28,28,65536" + SEARCH + "2", {}, {}, "the search space has no legal point"),
    # the partition is searched only where --space opens it: here a space with legal points (bigger GEMM tasks)
    # whose one sampled point is too slow
    ("search-4m-tasks", "search --shape 4096,128,112,112,128 --space tiles_per_group=32,64 "
     "--space gemm_mats_per_task=1,2,4" + SEARCH + "1", {}, {},
     "none of its 1 evaluations simulated (0 failed, 1 rejected); the first rejection: "),
    ("search-network-slow", "search --network resnet34" + SEARCH + "2", SLOW, {}, "no legal point"),
]


@pytest.fixture
def machine(monkeypatch):
    """64 GB free, the default time limit, and an alarm that turns a hang into a failure."""
    monkeypatch.setattr(size, "available_memory_bytes", lambda: FREE)
    monkeypatch.delenv("MEGASIM_MAX_SIM_SECONDS", raising=False)
    with alarm_after(20):
        yield monkeypatch


@pytest.mark.parametrize("argv, env, files, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_too_big_or_too_slow_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, machine, argv, env, files,
                                                                   phrase):
    for name, value in env.items():
        machine.setenv(name, value)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "out").mkdir()
    rc = main(argv.format(tmp=tmp_path).split())
    out, err = capsys.readouterr()
    assert_refused(rc, err, phrase)
    assert not any((tmp_path / "out").iterdir())


def test_every_paper_layer_passes_the_guard(machine):
    """The limits refuse only what is out of reach: each Table 2 layer, at each variant, is well inside them."""
    from megasim.app.catalog import layer_names, load_layer, partition_for
    for name in layer_names():
        layer = load_layer(name)
        for m in (2, 4, 6):
            est = size.estimate(DataRanges.of(layer, WinogradVariant(m), partition_for(layer, "h200")))
            assert est.seconds < size.MAX_SIM_SECONDS / 4 and est.bytes < 2 * 10**9, (name, m, est)


@pytest.mark.parametrize("layer, variant, part", [
    (Layer(2, 33, 17, 29, 100), 2, Partition(tiles_per_group=3, input_channels_per_task=7, gemm_mats_per_task=2,
                                             gemm_k_per_task=3, output_channels_per_task=5, filter_k_per_task=3)),
    (Layer(3, 64, 30, 40, 64), 4, Partition(tiles_per_group=200, input_channels_per_task=1)),
    (Layer(1, 16, 5, 7, 5), 6, Partition(tiles_per_group=1, gemm_mats_per_task=9, gemm_k_per_task=1)),
    (Layer(8, 3, 14, 14, 16), 4, Partition()),
], ids=["ragged", "wide-groups-one-channel", "one-tile-groups", "defaults"])
def test_the_estimate_counts_what_the_graph_holds(layer, variant, part):
    """Tasks and regions exactly; accesses from above (input reads are bounded, not counted), within 2x."""
    est = size.estimate(DataRanges.of(layer, WinogradVariant(variant), part))
    graph = build_graph(layer, WinogradVariant(variant), part)
    accesses = len(graph.read_region) + len(graph.write_region)
    assert est.tasks == graph.num_tasks and est.regions == graph.regions.num_regions
    assert accesses <= est.accesses < 2 * accesses


def test_the_limit_can_be_lifted(machine):
    """MEGASIM_MAX_SIM_SECONDS=0 lets a long simulation through; memory stays guarded."""
    slow = DataRanges.of(Layer(4096, 128, 112, 112, 128), WinogradVariant(4), Partition())
    tasks = size.estimate(slow).tasks
    with pytest.raises(MegasimError, match="past the 60 s limit"):
        size.check_size(slow, tasks)
    machine.setenv("MEGASIM_MAX_SIM_SECONDS", "0")
    assert size.check_size(slow, tasks) == tasks * size.BYTES_PER_TASK
    wide = DataRanges.of(Layer(64, 65536, 28, 28, 65536), WinogradVariant(4), Partition())
    with pytest.raises(MegasimError, match="of memory is available"):
        size.check_size(wide, size.estimate(wide).tasks)
