"""Mapping files: the JSON that `search` writes and `simulate`/`bench` read.

A mapping is only meaningful for the graph it permutes, so the file carries
the layer, variant and partition it was made for, and loading refuses any
other graph, listing the fields that differ. It also names the rest of the
build it was chosen for (`megasim.contract.build.Build`: the launch, the
scheduling mode and the GEMM body; `search` picks them), which readers take
as their default; the order itself runs in any mode. Files from before these
were recorded mean a fused, static build with the generic body, the only
build there was.

Reading checks every field's type and range before anything is built
(`MappingFile`): an order of floats or strings, a task id past int64, a
string variant or a params that is not a table is one line naming the field.
Whether the order is a legal schedule of the graph is `validate`'s question.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from megasim.io.files import read_json
from megasim.io.writing import write_then_rename
from megasim.contract.build import LAUNCHES, Build
from megasim.contract.errors import MegasimError
from megasim.contract.mapping.base import Mapping, validate
from megasim.contract.problem import VARIANTS, Dimension, Layer, Partition, WinogradVariant
from megasim.contract.resources import GEMM_BODIES
from megasim.contract.scheduling import MODES, check_mode
from megasim.io.schema import Int64, Items, Text, one_of, parse

SCHEMA = 1


@dataclass(kw_only=True)
class LayerDoc:
    __pydantic_config__ = {"extra": "forbid"}
    name: Text = "custom"
    n: Dimension
    c: Dimension
    h: Dimension
    w: Dimension
    k: Dimension


@dataclass(kw_only=True)
class MappingFile:
    """What a mapping file must hold; other keys (a search's score, say) ride along unchecked."""
    __pydantic_config__ = {"extra": "allow"}
    layer: LayerDoc
    variant: one_of(VARIANTS)
    partition: dict[Text, Dimension]
    mode: Text = MODES[0]
    launch: Text = LAUNCHES[0]  # checked by `build_of` (`Build`), as mode is by `mode_of`
    gemm: Text = GEMM_BODIES[0]
    precision: Text = "fp32"
    strategy: Text = "file"
    params: dict[Text, Any] = field(default_factory=dict)
    order: Annotated[list[Int64], Items(fail_fast=True)]  # one bad id is enough to refuse a million


def describe(graph) -> dict:
    layer = graph.layer
    return {"layer": {"name": layer.name, "n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "k": layer.k},
            "variant": graph.variant.m, "partition": graph.partition.to_dict()}


def save_mapping(path, graph, mapping: Mapping, extra: dict | None = None, mode: str = MODES[0],
                 launch: str = LAUNCHES[0], gemm: str = GEMM_BODIES[0], precision: str = "fp32") -> Path:
    """Write `mapping` of `graph`, naming the build it was chosen for (`Build` checks the launch, mode, body and
    precision; an FP32 build's file names no precision, as files did before there was a choice)."""
    Build(launch, graph.variant.m, check_mode(mode), gemm, precision=precision)
    doc = {"schema": SCHEMA, **describe(graph), "mode": mode, "launch": launch, "gemm": gemm,
           **({"precision": precision} if precision != "fp32" else {}),
           "strategy": mapping.strategy,
           "params": mapping.params, **(extra or {}), "order": [int(t) for t in mapping.order]}
    with write_then_rename(path) as tmp:
        tmp.write_text(json.dumps(doc))
    return Path(path)


def read_mapping_file(path) -> dict:
    """A mapping file's document, every field checked (`MappingFile`); not yet checked against a graph."""
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("order"), list):
        raise MegasimError(f"{path}: not a schema-{SCHEMA} mapping file (needs schema, layer, variant, partition, order)")
    parse(MappingFile, doc, str(path))
    return doc


def problem_of(doc: dict, origin: str) -> tuple[Layer, WinogradVariant, Partition]:
    try:
        layer = Layer(**doc["layer"])
        return layer, WinogradVariant(doc["variant"]), Partition.from_dict(doc["partition"])
    except (KeyError, TypeError) as exc:
        raise MegasimError(f"{origin}: mapping file lacks a valid layer/variant/partition ({exc})") from None


def mode_of(doc: dict, origin: str) -> str:
    """The scheduling mode a mapping file was made for; static where it names none."""
    try:
        return check_mode(doc.get("mode", MODES[0]))
    except MegasimError as exc:
        raise MegasimError(f"{origin}: {exc}") from None


def build_of(doc: dict, origin: str) -> Build:
    """The whole build a mapping file names, its partition written out."""
    _, variant, partition = problem_of(doc, origin)
    try:
        return Build(doc.get("launch", LAUNCHES[0]), variant.m, mode_of(doc, origin), doc.get("gemm", GEMM_BODIES[0]),
                     partition, doc.get("precision", "fp32"))
    except MegasimError as exc:
        raise MegasimError(f"{origin}: {exc}") from None


def load_mapping(path, graph) -> Mapping:
    """Read a mapping file made for `graph`; refuse one made for another graph."""
    doc = read_mapping_file(path)
    mine, theirs = describe(graph), {k: doc.get(k) for k in ("layer", "variant", "partition")}
    diff = [k for k in ("variant", "partition") if mine[k] != theirs[k]]
    if isinstance(theirs["layer"], dict):
        diff += [f"layer.{f}" for f in "nchwk" if mine["layer"][f] != theirs["layer"].get(f)]
    if diff:
        raise MegasimError(f"{path}: mapping was made for another graph; differs in {', '.join(diff)}")
    try:
        order = np.asarray(doc["order"], dtype=np.int64)
    except (TypeError, ValueError):
        raise MegasimError(f"{path}: order must be a list of integer task ids") from None
    mapping = Mapping(order=order, strategy=str(doc.get("strategy", "file")), params=doc.get("params") or {})
    validate(graph, mapping)
    return mapping
