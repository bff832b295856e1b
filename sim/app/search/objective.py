"""What one evaluation does: build (or reuse) the graph, make the mapping, simulate the build.

The objective is the time of the point's build (`megasim.contract.build.Build`): the SimPy
interpreter's fused launch in the point's scheduling mode, or the four non-fused kernels, on the point's
variant's graph with its GEMM body. A fused point's non-fused twin depends only on the variant, the
partition and the GEMM body (the non-fused kernels have no scheduling mode and no mapping), so it is
simulated once per (variant, partition, body) by `nonfused_us` and reported beside it: what fusing buys
at that point, like with like.

A fused point whose mapping options differ from the strategy's defaults counts only the share of its
predicted gain over the default mapping that the profile's held-out runs measured
(`Problem.mapping_gain`, `calibrate.uncertainty`): a search is drawn to the points the model
over-predicts, and this keeps it from choosing a build for a mapping gain that will not be there. The
row keeps the raw prediction beside the counted one.
Both functions are plain module-level functions of picklable arguments, so a
process pool and a Dask worker run them alike. A worker keeps the last few
graphs: points that share a variant and a partition share the graph.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache

from megasim.app.calibrate.uncertainty import counted as counted_gain
from megasim.contract.build import Build
from megasim.contract.options import declared
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import MAPPINGS, infusible_count, make, validate
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import Flavor, blocks_per_sm, megakernel_resources
from megasim.contract.scheduling import MODES
from megasim.contract.spec import GPUSpec
from megasim.engine.interpreter import SimpyInterpreter


@dataclass(frozen=True, eq=False)
class Problem:
    """Everything an evaluation needs besides the partition and the mapping options: picklable, sent
    with every task. A search's problem holds its reference point's build; `at` gives each point's own."""

    layer: Layer
    variant: WinogradVariant
    gpu: GPUSpec
    strategy: str = "paper"
    policy: str = DEFAULT_POLICY
    mode: str = MODES[0]
    launch: str = "fused"
    gemm: str = "generic"
    precision: str = "fp32"
    mapping_gain: float = 1.0  # share of a predicted gain over the default mapping that counts

    def at(self, space, point: dict) -> tuple[Problem, Partition, dict]:
        """(this problem with the point's build, its partition, its mapping options)."""
        b = space.setting(point)
        part, opts = space.split(point)
        return self.with_build(b), part, opts

    @staticmethod
    def at_default(layer: Layer, gpu: GPUSpec, strategy: str, space, intervals: dict | None = None) -> Problem:
        """A search's problem: the space's default point's build, and the share of a predicted mapping gain the
        profile's held-out runs measured (`[uncertainty] mapping_gain`; all of it without a profile)."""
        reference = space.setting(space.default_point())
        gain = float((intervals or {}).get("mapping_gain", 1.0))
        return Problem(layer, WinogradVariant(reference.variant), gpu, strategy,
                       mapping_gain=gain).with_build(reference)

    def with_build(self, b: Build) -> Problem:
        return replace(self, variant=WinogradVariant(b.variant), mode=b.mode, launch=b.launch, gemm=b.gemm,
                       precision=b.precision)

    @property
    def build(self) -> Build:
        return Build(self.launch, self.variant.m, self.mode, self.gemm, precision=self.precision)


@lru_cache(maxsize=8)
def _graph(layer: Layer, variant: WinogradVariant, partition: Partition):
    return build_graph(layer, variant, partition)


def evaluate(problem: Problem, partition: Partition, options: dict) -> dict:
    """Simulate one point's build; the numbers a table row needs (`time_us` is the objective)."""
    t0 = time.perf_counter()
    if problem.launch == "nonfused":
        return {"time_us": nonfused_us(problem, partition), "num_tbs": _graph(problem.layer, problem.variant,
                                                                             partition).num_tasks,
                "sim_seconds": time.perf_counter() - t0}
    graph = _graph(problem.layer, problem.variant, partition)
    mapping = make(graph, problem.strategy, **options)
    validate(graph, mapping)
    predicted = _fused_us(problem, graph, mapping)
    bps = blocks_per_sm(problem.gpu, megakernel_resources(partition, flavor=Flavor.of_graph(graph, problem.gemm,
                                                                                  problem.precision)))
    defaults = {o.name: o.default for o in declared(MAPPINGS.get(problem.strategy).options)}
    counted, default_us = predicted, None
    if problem.mapping_gain < 1 and options != defaults:
        default_us = _default_mapping_us(problem, partition, defaults)
        counted = counted_gain(predicted, default_us, problem.mapping_gain)
    return {"time_us": counted, "predicted_us": predicted, "default_mapping_us": default_us,
            "infusible": infusible_count(graph, mapping, problem.gpu.sm_count * bps),
            "num_tbs": graph.num_tasks, "blocks_per_sm": bps,
            "sim_seconds": time.perf_counter() - t0}


def _fused_us(problem: Problem, graph, mapping) -> float:
    engine = SimpyInterpreter(problem.gpu, problem.policy, gemm=problem.gemm, precision=problem.precision)
    return engine.run(graph, mapping, RunConfig(mode=problem.mode)).time_us


_DEFAULT_US: dict = {}


def _default_mapping_us(problem: Problem, partition: Partition, defaults: dict) -> float:
    """The same build under the strategy's default mapping, once per worker process."""
    key = (problem.layer, problem.variant, partition, problem.mode, problem.gemm, problem.precision, problem.strategy,
           problem.policy, repr(problem.gpu))
    if key not in _DEFAULT_US:
        graph = _graph(problem.layer, problem.variant, partition)
        _DEFAULT_US[key] = _fused_us(problem, graph, make(graph, problem.strategy, **defaults))
    return _DEFAULT_US[key]


def nonfused_us(problem: Problem, partition: Partition) -> float:
    """The four non-fused kernels of this variant, partition and GEMM body, launch gaps included."""
    graph = _graph(problem.layer, problem.variant, partition)
    engine = SimpyInterpreter(problem.gpu, problem.policy, gemm=problem.gemm, precision=problem.precision)
    return engine.run(graph, None, RunConfig(launch="nonfused")).time_us
