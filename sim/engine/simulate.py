"""One call from (layer, GPU, mapping choice) to a fused-vs-non-fused prediction."""
from __future__ import annotations

import time

from megasim.contract.graph import TaskGraph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import Mapping, infusible_count
from megasim.contract.modes import DEFAULT_POLICY
from megasim.contract.resources import Flavor, blocks_per_sm, megakernel_resources
from megasim.engine.interpreter import SimpyInterpreter
from megasim.engine.result import RunStats, SimResult


def simulate(graph: TaskGraph, mapping: Mapping, gpu, policy: str = DEFAULT_POLICY,
             policy_options: dict | None = None, mode: str = "static", gemm: str = "generic",
             precision: str = "fp32") -> SimResult:
    """Run the megakernel under `mapping` and the four non-fused kernels on one GPU model, through the
    SimPy interpreter. `mode` is the megakernel's scheduling mode, `gemm` the GEMM task's body of both,
    `precision` its products' arithmetic (3xTF32 needs the model's `gemm_precision` law). Each run's process CPU time is taken
    around the engine call alone (no graph, mapping or summary), which is what the engine's speed is
    measured by (`docs/performance.md`)."""
    t0 = time.perf_counter()
    engine = SimpyInterpreter(gpu, policy, policy_options, gemm, precision=precision)
    cpu = time.process_time()
    fused_run = engine.run(graph, mapping, RunConfig(mode=mode)).native
    fused_cpu = time.process_time() - cpu
    cpu = time.process_time()
    nonfused_run = engine.run(graph, None, RunConfig(launch="nonfused")).native
    nonfused_cpu = time.process_time() - cpu
    window = gpu.sm_count * blocks_per_sm(gpu, megakernel_resources(graph.partition,
                                                                    flavor=Flavor.of_graph(graph, gemm, precision)))
    return SimResult(layer=graph.layer.name, gpu=gpu.name, strategy=mapping.strategy, params=mapping.params,
                     policy=policy, mode=mode, gemm=gemm, precision=precision,
                     fused=RunStats.from_raw(fused_run, graph, gpu),
                     nonfused=RunStats.from_raw(nonfused_run, graph, gpu),
                     infusible=infusible_count(graph, mapping, window), num_tbs=graph.num_tasks,
                     sim_seconds=time.perf_counter() - t0, graph_summary=graph.summary(),
                     fused_sim_cpu_s=fused_cpu, nonfused_sim_cpu_s=nonfused_cpu)


def floors_us(graph: TaskGraph, gpu) -> dict:
    """The two floors: Winograd FLOPs at the FP32 peak, compulsory bytes at DRAM bandwidth."""
    return {"flop_floor_us": float(graph.flops.sum()) / (gpu.peak_fp32_tflops * 1e6),
            "dram_floor_us": graph.layer.min_dram_bytes / (gpu.dram_gbps * 1e3)}
