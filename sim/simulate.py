"""One call from (layer, GPU, mapping choice) to a fused-vs-non-fused prediction."""
from __future__ import annotations

import time

from sim.engine import fused_kernels, nonfused_kernels, run_kernels
from sim.graph import build_graph
from sim.mapping import infusible_count, make, validate
from sim.result import RunStats, SimResult


def simulate(layer, gpu, variant=None, partition=None, strategy: str = "paper", params: dict | None = None,
             policy: str = "in_order_round_robin", mapping=None, replay_sms=None) -> SimResult:
    """Build the graph, map it, validate, run the megakernel and the four kernels."""
    t0 = time.perf_counter()
    graph = build_graph(layer, variant, partition)
    if mapping is None:
        mapping = make(graph, strategy, **(params or {}))
    validate(graph, mapping)
    fused = RunStats.from_raw(run_kernels(graph, fused_kernels(graph, mapping), gpu, policy, replay_sms), graph, gpu)
    nonfused = RunStats.from_raw(run_kernels(graph, nonfused_kernels(graph), gpu, policy), graph, gpu)
    window = gpu.sm_count * gpu.blocks_per_sm(graph.partition.fused_resources())
    return SimResult(layer=layer.name, gpu=gpu.name, strategy=mapping.strategy, params=mapping.params,
                     policy=policy, fused=fused, nonfused=nonfused,
                     infusible=infusible_count(graph, mapping, window), num_tbs=graph.num_tasks,
                     sim_seconds=time.perf_counter() - t0, graph_summary=graph.summary())
