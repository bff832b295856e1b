"""The SimPy engine behind the interpreter protocol (`megasim.contract.interpreter`).

The GPU model, the dispatch policy (with its declared options), the GEMM task's body, whether the
megakernel resets its own control words and whether the non-fused launch transforms the filters or is given
them (as `megasim.gpu`'s CUDA interpreter takes them: build options) are the engine's own inputs, so they go to the
constructor; a run is `run_kernels` over the launches `RunConfig.launch` names, its records
and times unchanged. A build the CUDA kernels cannot compile (`resources.check_kernel_build`) is refused
before it runs, so no prediction is made for a build that cannot be measured. A replayed trace places only the megakernel's blocks, so the non-fused kernels,
which it does not cover, run under the default policy.
"""
from __future__ import annotations

from megasim.contract.graph import TaskGraph
from megasim.contract.interpreter import Execution, RunConfig
from megasim.contract.mapping import Mapping
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.resources import check_kernel_build
from megasim.engine import fused_kernels, nonfused_kernels, run_kernels
from megasim.engine.model import GPUModel


class SimpyInterpreter:
    """Predicts: the records carry simulated SMs and times, `native` the RawRun (L2, DRAM bytes)."""

    name = "simpy"

    def __init__(self, gpu: GPUModel, policy: str = DEFAULT_POLICY, policy_options: dict | None = None,
                 gemm: str = "generic", self_reset: bool = False, transform_filters: bool = True,
                 precision: str = "fp32"):
        self.gpu = gpu
        self.policy = policy
        self.policy_options = policy_options
        self.gemm = gemm
        self.self_reset = self_reset
        self.transform_filters = transform_filters
        self.precision = precision

    def run(self, graph: TaskGraph, mapping: Mapping | None, config: RunConfig = RunConfig()) -> Execution:
        check_kernel_build(graph.layer, graph.partition, self.gemm, precision=self.precision)
        policy, gpu = (self.policy, self.policy_options), self.gpu
        if config.launch == "fused":
            kernels = fused_kernels(graph, mapping, config.mode, self.gemm, self.self_reset, self.precision)
            gpu = gpu.for_megakernel()
        else:
            kernels = [k for k in nonfused_kernels(graph, self.gemm, self.transform_filters, self.precision)
                       if config.launch in ("nonfused", k.name)]
            policy = (DEFAULT_POLICY, None) if self.policy == "replay" else policy
        raw = run_kernels(graph, kernels, gpu, *policy, seed=config.seed)
        to_us = self.gpu.cycles_to_us
        return Execution(interpreter=self.name, launch=config.launch, records=raw.records,
                         time_us=to_us(raw.total_cycles),
                         launch_us=tuple(to_us(b - a) for a, b in raw.kernel_spans_cycles), native=raw)
