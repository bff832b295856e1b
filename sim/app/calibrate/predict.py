"""Predict what a measured run should have taken, under a given spec.

A measured run names its layer, partition and mapping; this rebuilds the same
graph and mapping and simulates the fused kernel, the non-fused sequence and
each non-fused kernel on its own. One function serves the fit, the
validation report and the regression test, so all three predict alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from megasim.engine import Kernel, fused_kernels, nonfused_kernels, run_kernels
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant
from megasim.contract.resources import stage_resources


def _freeze(d: dict) -> tuple:
    return tuple(sorted((k, _freeze(v) if isinstance(v, dict) else v) for k, v in d.items()))


@lru_cache(maxsize=64)
def _graph(layer: tuple, variant: int, partition: tuple):
    return build_graph(Layer(**dict(layer)), WinogradVariant(variant), Partition(**dict(partition)))


def graph_of(run: dict):
    return _graph(_freeze(run["layer"]), run.get("variant", 4), _freeze(run["partition"]))


@lru_cache(maxsize=512)
def _mapping(layer: tuple, variant: int, partition: tuple, strategy: str, params: tuple):
    return make(_graph(layer, variant, partition), strategy, **dict(params))


def mapping_of(run: dict):
    return _mapping(_freeze(run["layer"]), run.get("variant", 4), _freeze(run["partition"]),
                    run["strategy"], _freeze(run.get("params", {})))


@dataclass(frozen=True)
class Prediction:
    fused_us: float | None
    nonfused_us: float | None
    kernels_us: tuple | None


def predict_fused(run: dict, spec) -> float:
    graph = graph_of(run)
    return spec.cycles_to_us(run_kernels(graph, fused_kernels(graph, mapping_of(run)), spec).total_cycles)


def predict_nonfused(run: dict, spec) -> tuple[float, tuple]:
    """Non-fused total and each kernel's time, as four separate launches would take."""
    graph = graph_of(run)
    raw = run_kernels(graph, nonfused_kernels(graph), spec)
    return spec.cycles_to_us(raw.total_cycles), tuple(spec.cycles_to_us(b - a) for a, b in raw.kernel_spans_cycles)


def predict_kernel(run: dict, op: Op, spec) -> float:
    """One non-fused kernel alone (its own launch, cold L2 as far as the model is concerned)."""
    graph = graph_of(run)
    kern = Kernel(graph.tasks_of(op), stage_resources(graph.partition, op), False)
    return spec.cycles_to_us(run_kernels(graph, [kern], spec).total_cycles)
