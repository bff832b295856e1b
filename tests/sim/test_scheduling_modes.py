"""Scheduling modes (`megasim.contract.scheduling`) as the simulator and its front ends see them."""
import json

import pytest

from megasim.app.catalog import load_gpu, load_layer, partition_for
from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import WinogradVariant
from megasim.contract.scheduling import MODES
from megasim.engine.interpreter import SimpyInterpreter
from megasim.engine.simulate import simulate


def _simulate(capsys, *argv):
    rc = main(["simulate", "--shape", "2,32,20,20,32", "--json", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("mode", MODES)
def test_simulate_reports_its_mode_and_leaves_nonfused_alone(capsys, mode):
    rc, out, _ = _simulate(capsys, "--mode", mode)
    static = json.loads(_simulate(capsys)[1])
    doc = json.loads(out)
    assert rc == 0 and doc["mode"] == mode
    assert doc["nonfused_us"] == static["nonfused_us"] and doc["num_tbs"] == static["num_tbs"]


def test_unknown_mode_is_one_line_and_exit_2(capsys):
    rc, out, err = _simulate(capsys, "--mode", "eager")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "static" in err


def test_run_config_refuses_an_unknown_mode():
    with pytest.raises(MegasimError, match="unknown scheduling mode .eager.; known: static, persistent, ready_queue"):
        RunConfig(mode="eager")


def test_interpreter_and_simulate_agree_on_the_persistent_prediction():
    gpu = load_gpu("h200")
    layer = load_layer("ResNet-4")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer, "h200"))
    mapping = make(graph, "paper")
    execution = SimpyInterpreter(gpu).run(graph, mapping, RunConfig(mode="persistent"))
    assert execution.time_us == simulate(graph, mapping, gpu, mode="persistent").fused.time_us
