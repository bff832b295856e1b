"""What one evaluation does: build (or reuse) the graph, make the mapping, simulate the megakernel.

The objective is the fused time alone (the SimPy interpreter's fused launch,
in the point's scheduling mode, on the point's variant's graph); the four
non-fused kernels depend only on the variant and the partition (they have
no scheduling mode), so they are simulated once per (variant, partition) by
`nonfused_us` and reported beside it.
Both functions are plain module-level functions of picklable arguments, so a
process pool and a Dask worker run them alike. A worker keeps the last few
graphs: points that share a variant and a partition share the graph.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache

from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import infusible_count, make, validate
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import Flavor, blocks_per_sm, megakernel_resources
from megasim.contract.scheduling import MODES
from megasim.contract.spec import GPUSpec
from megasim.engine.interpreter import SimpyInterpreter


@dataclass(frozen=True, eq=False)
class Problem:
    """Everything an evaluation needs besides the partition and the mapping options: picklable, sent
    with every task. A search's problem holds its reference point's variant and mode; `at` gives each
    point's own."""

    layer: Layer
    variant: WinogradVariant
    gpu: GPUSpec
    strategy: str = "paper"
    policy: str = DEFAULT_POLICY
    mode: str = MODES[0]

    def at(self, space, point: dict) -> tuple[Problem, Partition, dict]:
        """(this problem with the point's variant and mode, its partition, its mapping options)."""
        variant, mode = space.setting(point)
        part, opts = space.split(point)
        return replace(self, variant=variant, mode=mode), part, opts


@lru_cache(maxsize=8)
def _graph(layer: Layer, variant: WinogradVariant, partition: Partition):
    return build_graph(layer, variant, partition)


def fused(problem: Problem, partition: Partition, options: dict) -> dict:
    """Simulate the megakernel for one point; the numbers a table row needs."""
    t0 = time.perf_counter()
    graph = _graph(problem.layer, problem.variant, partition)
    mapping = make(graph, problem.strategy, **options)
    validate(graph, mapping)
    execution = SimpyInterpreter(problem.gpu, problem.policy).run(graph, mapping, RunConfig(mode=problem.mode))
    bps = blocks_per_sm(problem.gpu, megakernel_resources(partition, flavor=Flavor.of_graph(graph)))
    return {"fused_us": execution.time_us,
            "infusible": infusible_count(graph, mapping, problem.gpu.sm_count * bps),
            "num_tbs": graph.num_tasks, "blocks_per_sm": bps,
            "sim_seconds": time.perf_counter() - t0}


def nonfused_us(problem: Problem, partition: Partition) -> float:
    """The four non-fused kernels of this variant and partition, launch gaps included."""
    graph = _graph(problem.layer, problem.variant, partition)
    return SimpyInterpreter(problem.gpu, problem.policy).run(graph, None, RunConfig(launch="nonfused")).time_us
