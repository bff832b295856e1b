"""A strategy declared in one file reaches the CLI, the search space and validate() with no other edit.

`chunked` below is the worked example of docs/architecture.md,
registered by the fixture (the `@strategy` line of that file) on a copy of the
registry, so other tests never see it.
"""
import json
from dataclasses import dataclass

import numpy as np
import pytest

from megasim.app.cli import main
from megasim.app.search.space import build_space
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import MAPPINGS, make, validate
from megasim.contract.mapping.strategies import strategy
from megasim.contract.options import option
from megasim.contract.problem import Layer, Op, Partition


@dataclass(frozen=True)
class ChunkedOptions:
    groups: int = option(8, "task groups per chunk", search=(1, 4, 16, 64))

    def __post_init__(self):
        if not isinstance(self.groups, int) or self.groups < 1:
            raise MegasimError(f"chunked mapping: groups must be an integer >= 1, got {self.groups!r}")


def chunked(graph, opts):
    g = graph.geometry
    stages = [graph.tasks_of(op).reshape(g.n_g, -1) for op in (Op.INPUT_TRANSFORM, Op.GEMM, Op.OUTPUT_TRANSFORM)]
    chunks = [s[b:b + opts.groups].ravel() for b in range(0, g.n_g, opts.groups) for s in stages]
    return np.concatenate([graph.tasks_of(Op.FILTER_TRANSFORM), *chunks])


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(MAPPINGS, "_items", dict(MAPPINGS._items))
    strategy("chunked", ChunkedOptions)(chunked)


SMALL = ["--shape", "2,32,20,20,32"]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_validate_accepts_it_between_interleave_and_sequential(registered):
    graph = build_graph(Layer(2, 32, 28, 28, 64), partition=Partition(tiles_per_group=8))
    for groups in (1, 3, graph.geometry.n_g, 10 * graph.geometry.n_g):
        validate(graph, make(graph, "chunked", groups=groups))
    assert np.array_equal(make(graph, "chunked", groups=1).order, make(graph, "interleave").order)


def test_the_cli_lists_it_and_takes_its_option(registered, capsys):
    rc, out, _ = run(capsys, "mappings")
    assert rc == 0 and "  chunked " in out and "groups=8: task groups per chunk (search: 1, 4, 16, 64)" in out
    by_opt = run(capsys, "simulate", *SMALL, "--strategy", "chunked", "--opt", "groups=2", "--json")
    by_flag = run(capsys, "simulate", *SMALL, "--strategy", "chunked", "--groups", "2", "--json")
    assert by_opt[0] == by_flag[0] == 0
    assert json.loads(by_opt[1])["params"] == json.loads(by_flag[1])["params"] == {"groups": 2}
    rc, _, err = run(capsys, "simulate", *SMALL, "--strategy", "chunked", "--opt", "groups=0")
    assert rc == 2 and "groups must be an integer >= 1" in err and err.count("\n") == 1


def test_the_search_space_takes_its_declared_values(registered):
    space = build_space("chunked", Partition())
    assert {p.name: p.values for p in space.params if p.kind == "mapping"} == {"groups": (1, 4, 8, 16, 64)}
    assert dict(space.default_mapping) == {"groups": 8}


def test_megasim_search_searches_it(registered, capsys, tmp_path):
    fixed = [f"--space={name}={value}" for name, value in (("tiles_per_group", 64), ("gemm_k_per_task", 32),
                                                           ("gemm_mats_per_task", 2), ("threads", 256))]
    rc, out, err = run(capsys, "search", "--shape", "2,32,20,20,64", "--strategy", "chunked", "--space", "groups=1,4", *fixed,
                       "--launch", "fused", "--variant", "4", "--mode", "static", "--gemm", "generic",
                       "--method", "grid", "--jobs", "1", "--quiet", "--out", str(tmp_path))
    assert rc == 0, err
    rows = json.loads((tmp_path / "evaluations.json").read_text())["evaluations"]
    assert sorted(r["groups"] for r in rows) == [1, 4]
