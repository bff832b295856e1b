"""Predict what a measured run should have taken, under a given spec.

A measured run names its layer, partition and mapping; this rebuilds the same
graph and mapping and simulates the fused kernel, the non-fused sequence and
each non-fused kernel on its own. One function serves the fit, the
validation report and the regression test, so all three predict alike.
"""
from __future__ import annotations

from functools import lru_cache

from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import OP_NAMES, Layer, Op, Partition, WinogradVariant
from megasim.engine.interpreter import SimpyInterpreter


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


def predict_fused(run: dict, spec) -> float:
    """The megakernel under the run's mapping and scheduling mode (static when the run names none)."""
    return SimpyInterpreter(spec).run(graph_of(run), mapping_of(run), RunConfig(mode=run.get("mode", "static"))).time_us


def predict_nonfused(run: dict, spec) -> tuple[float, tuple]:
    """Non-fused total and each kernel's time, as four separate launches would take."""
    execution = SimpyInterpreter(spec).run(graph_of(run), None, RunConfig(launch="nonfused"))
    return execution.time_us, execution.launch_us


def predict_kernel(run: dict, op: Op, spec) -> float:
    """One non-fused kernel alone (its own launch, cold L2 as far as the model is concerned)."""
    return SimpyInterpreter(spec).run(graph_of(run), None, RunConfig(launch=OP_NAMES[op])).time_us


def predict_kernel_in_graph(run: dict, op: Op, spec) -> float:
    """One non-fused kernel as a graph prefix difference measures it (`NonFusedConv.stage_times_graphed`):
    the first stage with the sequence's first launch, a later one with one launch gap in place of it."""
    alone = predict_kernel(run, op, spec)
    return alone if op == Op.FILTER_TRANSFORM else alone - spec.first_launch_us + spec.launch_overhead_us


def measured_kernel(run: dict, op: Op) -> tuple[float, bool]:
    """(time, timed in a graph) of one non-fused kernel of a run: its graph-prefix time where the run has one
    (`attach_graph_kernels`), else the time between eager events."""
    graphed = run.get("nonfused_kernels_graph_us")
    return (graphed[op], True) if graphed else (run["nonfused_kernels_us"][op], False)
