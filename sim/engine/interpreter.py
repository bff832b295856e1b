"""The SimPy engine behind the interpreter protocol (`megasim.contract.interpreter`).

The GPU model and the dispatch policy are the engine's own inputs, so they go to the constructor;
a run is `run_kernels` over the launches `RunConfig.launch` names, its records and times unchanged.
"""
from __future__ import annotations

from megasim.contract.graph import TaskGraph
from megasim.contract.interpreter import Execution, RunConfig
from megasim.contract.mapping import Mapping
from megasim.contract.spec import GPUSpec
from megasim.engine import fused_kernels, nonfused_kernels, run_kernels


class SimpyInterpreter:
    """Predicts: the records carry simulated SMs and times, `native` the RawRun (L2, DRAM bytes)."""

    name = "simpy"

    def __init__(self, gpu: GPUSpec, policy: str = "in_order_round_robin"):
        self.gpu = gpu
        self.policy = policy

    def run(self, graph: TaskGraph, mapping: Mapping | None, config: RunConfig = RunConfig()) -> Execution:
        if config.launch == "fused":
            kernels = fused_kernels(graph, mapping, config.mode)
        else:
            kernels = [k for k in nonfused_kernels(graph) if config.launch in ("nonfused", k.name)]
        raw = run_kernels(graph, kernels, self.gpu, self.policy, seed=config.seed)
        to_us = self.gpu.cycles_to_us
        return Execution(interpreter=self.name, launch=config.launch, records=raw.records,
                         time_us=to_us(raw.total_cycles),
                         launch_us=tuple(to_us(b - a) for a, b in raw.kernel_spans_cycles), native=raw)
