"""The task-graph emulator: a megakernel launch replayed one thread block at a time in NumPy.

Logical block b runs task `mapping.order[b]`, exactly as the megakernel's
atomic ticket hands them out. On the GPU a block whose parents have not
finished spins; here blocks run strictly one after another, so a parent
that has not run yet never will, and a block that finds one of its
counters non-zero is proof the mapping deadlocks (or, with enough SMs,
stalls). The emulator raises instead of waiting, which is how CI shows that
every registered strategy is executable and computes the convolution.

The four task functions below read and write exactly the task's data
ranges (`megasim.contract.ranges`, the same ranges the simulator's L2
regions count); the CUDA device functions implement the same thing, and a
GPU test can call `run_task` on one task as its reference.
U, V, M and y start as NaN, so a task that reads something no task wrote
shows up in the result instead of passing on stale zeros.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from megasim.gpu.layout import gather_patches, scatter_tiles
from megasim.gpu.winograd import filter_transform, input_transform, output_transform, transform_matrices
from megasim.contract.errors import MegasimError
from megasim.contract.graph import NO_COUNTER, TaskGraph
from megasim.contract.mapping import Mapping
from megasim.contract.problem import OP_NAMES, Op


@dataclass(frozen=True, eq=False)
class EmulatorBuffers:
    """The buffers of one emulated launch in one dtype; tasks write into the arrays."""

    x: np.ndarray   # [N][H][W][C]
    w: np.ndarray   # [K][3][3][C]
    U: np.ndarray   # [alpha^2][C][K]
    V: np.ndarray   # [alpha^2][num_tiles][C]
    M: np.ndarray   # [alpha^2][num_tiles][K]
    y: np.ndarray   # [N][H][W][K]
    AT: np.ndarray
    G: np.ndarray
    BT: np.ndarray

    @staticmethod
    def allocate(graph: TaskGraph, x: np.ndarray, w: np.ndarray, dtype=np.float32) -> EmulatorBuffers:
        shapes = graph.ranges.shapes()
        for name, arr in (("x", x), ("w", w)):
            if np.shape(arr) != shapes[name]:
                raise MegasimError(f"{name} has shape {list(np.shape(arr))}, but layer "
                                   f"{graph.layer.name} ({graph.layer.shape()}) needs {list(shapes[name])}")
        poisoned = {name: np.full(shapes[name], np.nan, dtype=dtype) for name in ("U", "V", "M", "y")}
        AT, G, BT = transform_matrices(graph.variant.m, dtype)
        return EmulatorBuffers(x=np.asarray(x, dtype=dtype), w=np.asarray(w, dtype=dtype),
                         AT=AT, G=G, BT=BT, **poisoned)


def _tile_ids(graph: TaskGraph, g: int) -> tuple[slice, np.ndarray, tuple[int, int]]:
    tiles = graph.ranges.tiles[g]
    geo = graph.geometry
    return tiles, np.arange(tiles.start, tiles.stop), (geo.tiles_h, geo.tiles_w)


def filter_task(graph: TaskGraph, ws: EmulatorBuffers, group: int, f: int) -> None:
    """U[e][c][k] = (G g_kc G^T)[e] for the task's filters k and every channel c."""
    ks = graph.ranges.filter_k[f]
    ws.U[:, :, ks] = filter_transform(ws.w[ks], ws.G)


def input_task(graph: TaskGraph, ws: EmulatorBuffers, group: int, cb: int) -> None:
    """V[e][tile][c] = (B^T d B)[e] for the group's tiles and the task's channels."""
    tiles, ids, grid = _tile_ids(graph, group)
    cs = graph.ranges.input_c[cb]
    patches = gather_patches(ws.x, ids, grid, graph.variant.m, cs)
    ws.V[:, tiles, cs] = input_transform(patches, ws.BT)


def ordered_matmul(v: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Batched v @ u, summed over c in ascending order as the GEMM kernel sums.

    BLAS picks its own summation order; fixing it keeps float32 results close
    to the device's, whose reduction order is part of the contract. Not
    bitwise: NumPy rounds each product and each sum, the device's FFMA rounds once.
    """
    acc = np.zeros((v.shape[0], v.shape[1], u.shape[2]), dtype=np.result_type(v, u))
    for c in range(v.shape[2]):
        acc += v[:, :, c, None] * u[:, None, c, :]
    return acc


def gemm_task(graph: TaskGraph, ws: EmulatorBuffers, group: int, j: int) -> None:
    """M[e][tile][k] = sum_c V[e][tile][c] U[e][c][k] for the task's points e and channels k."""
    tiles, _, _ = _tile_ids(graph, group)
    es, ks = graph.ranges.gemm_block(j)
    ws.M[es, tiles, ks] = ordered_matmul(ws.V[es, tiles, :], ws.U[es, :, ks])


def output_task(graph: TaskGraph, ws: EmulatorBuffers, group: int, ob: int) -> None:
    """y = A^T M_tile A at the in-image positions of the group's tiles, for the task's channels."""
    tiles, ids, grid = _tile_ids(graph, group)
    ks = graph.ranges.output_k[ob]
    scatter_tiles(ws.y, output_transform(ws.M[:, tiles, ks], ws.AT), ids, grid, ks)


TASKS = {Op.FILTER_TRANSFORM: filter_task, Op.INPUT_TRANSFORM: input_task,
         Op.GEMM: gemm_task, Op.OUTPUT_TRANSFORM: output_task}


def run_task(graph: TaskGraph, ws: EmulatorBuffers, task: int) -> None:
    """Run one task by id, ignoring dependencies: the per-task reference."""
    TASKS[Op(graph.op[task])](graph, ws, int(graph.group[task]), int(graph.index[task]))


def _describe(graph: TaskGraph, block: int, task: int) -> str:
    op = OP_NAMES[Op(graph.op[task])]
    where = "" if graph.group[task] < 0 else f" of group {graph.group[task]}"
    return f"block {block} (task {task}, {op} {graph.index[task]}{where})"


def emulate(graph: TaskGraph, mapping: Mapping, x: np.ndarray, w: np.ndarray,
            dtype=np.float32) -> np.ndarray:
    """Run every block in mapping order and return y (NHWC, `dtype`).

    Raises MegasimError at the first block that would wait on a counter that
    no earlier block can release, or that names a task twice or none at all.
    """
    ws = EmulatorBuffers.allocate(graph, x, w, dtype)
    counters = graph.counter_init.astype(np.int64)
    done = np.zeros(graph.num_tasks, dtype=bool)
    order = np.asarray(mapping.order)
    for block, task in enumerate(order.tolist()):
        if not 0 <= task < graph.num_tasks:
            raise MegasimError(f"mapping not executable: block {block} names task {task}, "
                               f"outside [0, {graph.num_tasks})")
        if done[task]:
            raise MegasimError(f"mapping not executable: {_describe(graph, block, task)} runs a second time")
        for counter in graph.waits_on[task].tolist():
            if counter != NO_COUNTER and counters[counter] != 0:
                raise MegasimError(
                    f"mapping not executable: {_describe(graph, block, task)} waits on counter "
                    f"{counter}, which still needs {counters[counter]} parent(s) that no earlier block ran")
        run_task(graph, ws, task)
        done[task] = True
        if graph.signals[task] != NO_COUNTER:
            counters[graph.signals[task]] -= 1
    if not done.all():
        missing = np.flatnonzero(~done)
        raise MegasimError(f"mapping not executable: {len(missing)} task(s) never run, "
                           f"first {missing[:5].tolist()}")
    return ws.y
