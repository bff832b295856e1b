"""Measured runs (`<gpu>_runs.json`), checked whole before any run is simulated.

`megasim validate` and `megasim calibrate` spend minutes simulating every run,
so a bad run found on the way (a string time, a missing layer) used to end
them after the work, with a traceback. `load_runs` checks every run first,
field by field (`megasim.io.schema`), then what the fields name: the partition's
fields, the strategy and its options. It returns the runs as the plain dicts
the predictors take, unchanged.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional

from megasim.contract.errors import MegasimError
from megasim.io.files import read_json, read_json_lines
from megasim.contract.mapping import MAPPINGS
from megasim.contract.mapping.io import LayerDoc
from megasim.contract.problem import VARIANTS, Dimension, Layer, Partition
from megasim.contract.scheduling import check_mode
from megasim.io.schema import Items, Text, float_in, one_of, parse

Micros = float_in(0.0, 1e9, above=True)


@dataclass(kw_only=True)
class _NamedLayer(LayerDoc):
    name: Text = field()  # required here: a bare annotation would inherit LayerDoc's default


@dataclass(kw_only=True)
class _MeasuredShape:
    """What a measurement ran: the layer, the Winograd variant and the partition (`_run_key` matches on them)."""
    __pydantic_config__ = {"extra": "allow"}
    layer: _NamedLayer
    variant: one_of(VARIANTS) = 4
    partition: dict[Text, Dimension]


@dataclass(kw_only=True)
class Run(_MeasuredShape):
    """One measured run: the problem, the mapping, its split and the measured times."""
    strategy: Text
    params: dict[Text, Any] = field(default_factory=dict)
    mode: Text = "static"
    split: Literal["train", "heldout"]
    fused_us: Micros
    nonfused_us: Micros
    nonfused_kernels_us: Optional[Annotated[list[Micros], Items(min_length=4, max_length=4)]] = None


@dataclass(kw_only=True)
class GraphKernels(_MeasuredShape):
    """One shape's non-fused kernels timed as CUDA-graph prefixes (a line of `<gpu>_kernel_graph_times.jsonl`)."""
    graph_kernels_us: Annotated[list[Micros], Items(min_length=4, max_length=4)]


@dataclass(kw_only=True)
class RunsFile:
    __pydantic_config__ = {"extra": "allow"}
    header: dict[Text, Any] = field(default_factory=dict)
    runs: Annotated[list[Run], Items(min_length=1)]


@dataclass(kw_only=True)
class MeasuredBuild(_MeasuredShape):
    """One build `bench` timed whole (a row of `<gpu>_builds.json`): the problem, the mapping, the build's
    axes (`megasim.contract.build.Build`), its split and its median time."""
    strategy: Text
    params: dict[Text, Any] = field(default_factory=dict)
    launch: Literal["fused", "nonfused"]
    mode: Text = "static"
    gemm: Literal["generic", "warp"] = "generic"
    split: Literal["train", "heldout"]
    us: Micros


@dataclass(kw_only=True)
class BuildsFile:
    __pydantic_config__ = {"extra": "allow"}
    header: dict[Text, Any] = field(default_factory=dict)
    builds: Annotated[list[MeasuredBuild], Items(min_length=1)]


def _checked_rows(path, key: str, schema, about: str) -> tuple[dict, list[dict]]:
    """(header, rows) of a measurement file, a JSON object whose `key` lists the rows (`about` says what one row
    is): checked whole against `schema`, then each row as a run is."""
    doc = read_json(path)
    if not isinstance(doc, dict) or key not in doc:
        raise MegasimError(f"{path}: not a {key} file (a JSON object with \"{key}\": [...], one per {about})")
    parse(schema, doc, str(path))
    for i, row in enumerate(doc[key]):
        check_run(row, f"{path}: {key}[{i}]")
    return doc.get("header", {}), doc[key]


def load_builds(path) -> tuple[dict, list[dict]]:
    """(header, rows) of a builds file, every row checked as a run is, and its build against the decision
    space; anything wrong is one MegasimError naming the row."""
    from megasim.contract.build import Build
    header, rows = _checked_rows(path, "builds", BuildsFile, "timed build")
    for i, row in enumerate(rows):
        try:
            Build(row["launch"], row.get("variant", 4), row.get("mode", "static"), row.get("gemm", "generic"),
                  precision=row.get("precision", "fp32"))
        except MegasimError as exc:
            raise MegasimError(f"{path}: builds[{i}]: {exc}") from None
    return header, rows


def load_runs(path) -> tuple[dict, list[dict]]:
    """(header, runs) of a runs file, every run checked; anything wrong is one MegasimError naming the run."""
    return _checked_rows(path, "runs", RunsFile, "measured run")


def check_run(run: dict, where: str) -> None:
    """What a run's checked fields name: a layer, a partition, a scheduling mode and a mapping that exist."""
    try:
        Layer(**run["layer"])
        Partition.from_dict(run["partition"])
        check_mode(run.get("mode", "static"))
        MAPPINGS.get(run["strategy"]).make_options(run.get("params", {}))
    except MegasimError as exc:
        raise MegasimError(f"{where}: {exc}") from None


def _run_key(run: dict) -> str:
    return json.dumps([run["layer"], run.get("variant", 4), run["partition"]], sort_keys=True)


def attach_graph_kernels(runs: list[dict], path) -> int:
    """Give every run whose layer, variant and partition a line of `path` (JSON lines) measured the field
    `nonfused_kernels_graph_us`, that line's graph-prefix kernel times; returns how many runs got one.

    Stage 2 fits task types on these where present: unlike the eager event times they carry no host time.
    A missing file attaches nothing; an empty file or a malformed line is one MegasimError naming it."""
    from pathlib import Path
    path = Path(path)
    if not path.exists():
        return 0
    by_key = {}
    for i, doc in read_json_lines(path):
        parse(GraphKernels, doc, f"{path}: line {i}")
        by_key[_run_key(doc)] = [float(t) for t in doc["graph_kernels_us"]]
    attached = 0
    for run in runs:
        kernels = by_key.get(_run_key(run))
        if kernels:
            run["nonfused_kernels_graph_us"] = kernels
            attached += 1
    return attached
