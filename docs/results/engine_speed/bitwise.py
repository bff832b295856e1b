"""A digest of everything the engine returns, over 400 runs: run it under two builds and diff the outputs.

    python docs/results/engine_speed/bitwise.py > a.txt                        # one install (e.g. compiled)
    MEGASIM_PURE_PYTHON=1 python docs/results/engine_speed/bitwise.py > b.txt  # the same source, pure Python
    diff a.txt b.txt                                                           # no output: bit for bit the same

Each line is one run and the first 16 hex digits of a SHA-256 over its records (every field of every block),
DRAM bytes per block, kernel spans, L2 statistics and total cycles, then its prediction in us. Runs: ResNet-2,
ResNet-1, ResNet-4 and YOLOv3-5 on h200 (calibrated) and v100; fused in the static, persistent and ready-queue
modes and non-fused; the paper, sequential and random_topo mappings; every dispatch policy but replay;
quantum 32 and 0; and the default-off model forms (the law resident_sharing, wait_check_cycles, issue_weight,
gemm_neighbour_stretch, block_work_cv). Seed 3. About 12 s with the engine compiled, 25 s pure Python.
"""
from __future__ import annotations

import hashlib
import sys

import numpy as np

from megasim.app.calibrate.profile import gpu_for_simulation
from megasim.app.catalog import partition_for, resolve_layer
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import WinogradVariant
import megasim.engine
from megasim.engine import fused_kernels, nonfused_kernels, run_kernels
from megasim.engine.dispatch import DISPATCH_POLICIES

LAYERS = ("ResNet-2", "ResNet-1", "ResNet-4", "YOLOv3-5")
VARIANTS = {"base": {}, "resident": {"resident_sharing": {}}, "wait": {"wait_check_cycles": 40.0},
            "weight": {"resident_sharing": {"issue_weight": {"gemm": 3.0, "input_transform": 1.0,
                                                             "output_transform": 0.7}}},
            "stretch": {"gemm_neighbour_stretch": {"stretch": {"input_transform": 0.4, "output_transform": 0.2}}},
            "cv": {"block_work_cv": 0.2}}


def digest(run) -> str:
    h = hashlib.sha256()
    h.update(run.records.tobytes())
    h.update(np.ascontiguousarray(run.block_dram_bytes).tobytes())
    h.update(repr(run.kernel_spans_cycles).encode())
    h.update(repr(sorted(run.l2_stats.items())).encode())
    h.update(repr(run.total_cycles).encode())
    return h.hexdigest()[:16]


def runs(graph, gpu, variant: str):
    """(label, kernels, policy, quantum) of one layer under one model form."""
    policies = sorted(p for p in DISPATCH_POLICIES.names() if p != "replay")
    for mapping in ("paper", "sequential", "random_topo") if variant == "base" else ("paper",):
        order = make(graph, mapping)
        for mode in ("static", "persistent", "ready_queue"):
            for policy in policies if variant == "base" and mode == "static" else ["in_order_round_robin"]:
                for quantum in (32.0, 0.0) if variant == "base" else (32.0,):
                    yield f"{mapping} {mode} {policy} {quantum} fused", fused_kernels(graph, order, mode), policy, quantum
    if variant in ("base", "cv", "weight"):
        yield "nonfused", nonfused_kernels(graph), "in_order_round_robin", 32.0


def main() -> None:
    compiled = getattr(megasim.engine, "COMPILED", False)  # False before the engine could be compiled
    print(f"# engine {'compiled' if compiled else 'pure Python'}", file=sys.stderr)
    n = 0
    for gpu_name in ("h200", "v100"):
        base, _ = gpu_for_simulation(gpu_name)
        for layer in LAYERS:
            spec = resolve_layer(layer, None)
            graph = build_graph(spec, WinogradVariant(), partition_for(spec, base.name))
            for variant, change in VARIANTS.items():
                gpu = base.with_model(**change) if change else base
                for label, kernels, policy, quantum in runs(graph, gpu, variant):
                    run = run_kernels(graph, kernels, gpu, policy, None, quantum, seed=3)
                    print(gpu_name, layer, variant, label, digest(run), repr(gpu.cycles_to_us(run.total_cycles)),
                          flush=True)
                    n += 1
    print(f"runs {n}")


if __name__ == "__main__":
    main()
