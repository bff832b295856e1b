"""The FLOPs each task's code actually issues, which is what its SM spends time on.

`TaskGraph.flops` counts the useful arithmetic of a task. The kernels do
more where the shapes are ragged, and the difference is what the corpus of
odd shapes exposed (docs/decisions.md, "A task costs the FLOPs its code issues"):

- A GEMM task computes its whole register tile whatever is left of the
  matrix: every thread multiplies `tiles_per_group x gemm_k_per_task` per
  point, and the channel loop runs in whole steps of the shared-memory ring
  (`gemm_ring`), with zeros loaded past C, K or the last tile. At K = 3
  with 16 columns per task that is 5x the useful work.
- A transform task spreads its (tile, channel) items over the block's
  threads in rounds; the last round runs with idle lanes, so a task of 192
  items on 128 threads costs two full rounds.

Both are facts of the code in gpu/kernels/winograd.cuh, so they live in the
contract beside the resource plan, and the engine divides these FLOPs, not
the useful ones, by the achieved rate.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.problem import Op
from megasim.contract.resources import GEMM_K_STEP, gemm_plan, gemm_ring
from megasim.contract.transforms import transform_flops


def _gemm_step(part, k_step: int) -> tuple[int, int]:
    """(channels, Winograd points) one GEMM ring step covers; (k_step, 1) where no thread layout tiles
    the task (a partition the model may simulate but the kernels cannot build)."""
    try:
        return gemm_ring(part, k_step)[0], gemm_plan(part).ge
    except MegasimError:
        return k_step, 1


def serial_steps(graph, k_step: int = GEMM_K_STEP) -> np.ndarray:
    """int64[T]: the steps on each task's critical path, which no amount of parallel hardware shortens.

    A transform thread works through its share of the task's items one round at a time, each round a
    set of loads in flight and then their arithmetic; a GEMM block runs its ring one channel step at a
    time. A block that has an SM to itself (a small kernel, the tail of a wave) takes at least its
    steps times the latency of one (`megasim.engine.model.Model.step_cycles`).
    """
    part, geo, ranges, layer = graph.partition, graph.geometry, graph.ranges, graph.layer
    out = np.zeros(graph.num_tasks, dtype=np.int64)
    tiles = graph.group_tiles[graph.group.clip(0)]
    items = {Op.FILTER_TRANSFORM: lambda t, i: ranges.filter_k.sizes()[i] * layer.c,
             Op.INPUT_TRANSFORM: lambda t, i: tiles[t] * ranges.input_c.sizes()[i],
             Op.OUTPUT_TRANSFORM: lambda t, i: tiles[t] * ranges.output_k.sizes()[i]}
    for op in Op:
        tasks = graph.tasks_of(op)
        idx = graph.index[tasks]
        if op == Op.GEMM:
            bk, ge = _gemm_step(part, k_step)
            out[tasks] = -(-ranges.points.sizes()[idx // geo.n_kb] // ge) * -(-layer.c // bk)
        else:
            out[tasks] = -(-items[op](tasks, idx) // part.threads)
    return out


def issued_flops(graph, k_step: int = GEMM_K_STEP) -> np.ndarray:
    """float64[T]: FLOPs each task's code issues, padding and idle lanes included: its serial steps times
    what one step issues (a round of items on every thread; a whole tile times one ring step)."""
    part, fl = graph.partition, transform_flops(graph.variant.m)
    bk, ge = _gemm_step(part, k_step)
    per_step = np.array([part.threads * fl.filter_per_kc, part.threads * fl.input_per_tile_channel,
                         2.0 * part.tiles_per_group * part.gemm_k_per_task * bk * ge,
                         part.threads * fl.output_per_tile_channel])
    steps = graph.serial_steps if graph.serial_steps is not None else serial_steps(graph, k_step)
    return steps * per_step[graph.op]


__all__ = ["issued_flops", "serial_steps"]
