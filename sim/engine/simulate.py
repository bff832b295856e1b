"""One call from (layer, GPU, mapping choice) to a fused-vs-non-fused prediction."""
from __future__ import annotations

import time

from megasim.engine import fused_kernels, nonfused_kernels, run_kernels
from megasim.contract.graph import TaskGraph, build_graph
from megasim.contract.mapping import Mapping, infusible_count, make, validate
from megasim.contract.mapping.io import load_mapping
from megasim.contract.resources import blocks_per_sm, megakernel_resources
from megasim.engine.result import RunStats, SimResult


def prepare(layer, variant=None, partition=None, strategy: str = "paper", params: dict | None = None,
            mapping_path=None) -> tuple[TaskGraph, Mapping]:
    """The graph and a validated mapping: from a strategy, or read from a mapping file."""
    graph = build_graph(layer, variant, partition)
    if mapping_path is not None:
        return graph, load_mapping(mapping_path, graph)
    mapping = make(graph, strategy, **(params or {}))
    validate(graph, mapping)
    return graph, mapping


def simulate(graph: TaskGraph, mapping: Mapping, gpu, policy: str = "in_order_round_robin",
             replay_sms=None) -> SimResult:
    """Run the megakernel under `mapping` and the four non-fused kernels on one GPU model.

    A replayed trace places the megakernel's blocks; the non-fused kernels, which the trace does not
    cover, fall back to the default policy.
    """
    t0 = time.perf_counter()
    fused = RunStats.from_raw(run_kernels(graph, fused_kernels(graph, mapping), gpu, policy, replay_sms), graph, gpu)
    nonfused_policy = "in_order_round_robin" if policy == "replay" else policy
    nonfused = RunStats.from_raw(run_kernels(graph, nonfused_kernels(graph), gpu, nonfused_policy), graph, gpu)
    window = gpu.sm_count * blocks_per_sm(gpu, megakernel_resources(graph.partition))
    return SimResult(layer=graph.layer.name, gpu=gpu.name, strategy=mapping.strategy, params=mapping.params,
                     policy=policy, fused=fused, nonfused=nonfused,
                     infusible=infusible_count(graph, mapping, window), num_tbs=graph.num_tasks,
                     sim_seconds=time.perf_counter() - t0, graph_summary=graph.summary())


def floors_us(graph: TaskGraph, gpu) -> dict:
    """The two floors: Winograd FLOPs at the FP32 peak, compulsory bytes at DRAM bandwidth."""
    L = graph.layer
    compulsory = 4 * (L.n * L.c * L.h * L.w + L.k * L.c * 9 + L.n * L.k * L.h * L.w)
    return {"flop_floor_us": float(graph.flops.sum()) / (gpu.peak_fp32_tflops * 1e6),
            "dram_floor_us": compulsory / (gpu.dram_gbps * 1e3)}
