"""Where every task's data lives: tile geometry and the buffer layouts both executors share.

The convolution's output is cut into m x m tiles, numbered row-major over
(image, tile row, tile column). Tile (ti, tj) writes output rows ti*m ..
ti*m+m-1 and reads the alpha x alpha input patch whose top-left corner is
row ti*m-1, column tj*m-1, because pad 1 shifts the 3x3 window up and left
by one. Edge tiles hang over the image: reads there are zero and writes are
dropped, which is how ragged H and W are handled without a second code path.

The intermediate buffers put the Winograd point e = row*alpha + col first, so
a GEMM task's operands are alpha^2 independent, contiguous matrices:

    U [alpha^2][C][K]          transformed filters
    V [alpha^2][num_tiles][C]  transformed inputs
    M [alpha^2][num_tiles][K]  their products

The index ranges a task owns are defined here once, from the Partition; the
NumPy emulator and the CUDA host code both read them.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.graph import TaskGraph


def buffer_shapes(graph: TaskGraph) -> dict[str, tuple[int, ...]]:
    """Shapes of x, w, U, V, M and y for this graph's layer and variant."""
    layer, a2, tiles = graph.layer, graph.variant.alpha ** 2, graph.geometry.num_tiles
    return {"x": (layer.n, layer.h, layer.w, layer.c), "w": (layer.k, 3, 3, layer.c),
            "U": (a2, layer.c, layer.k), "V": (a2, tiles, layer.c), "M": (a2, tiles, layer.k),
            "y": (layer.n, layer.h, layer.w, layer.k)}


def _block(index: int, size: int, total: int) -> slice:
    return slice(index * size, min((index + 1) * size, total))


def filter_ks(graph: TaskGraph, f: int) -> slice:
    """Filters transformed by filter task f."""
    return _block(f, graph.partition.filter_k_per_task, graph.layer.k)


def group_tiles(graph: TaskGraph, g: int) -> slice:
    """Tile ids of task group g; the last group may be short."""
    return _block(g, graph.partition.tiles_per_group, graph.geometry.num_tiles)


def input_channels(graph: TaskGraph, cb: int) -> slice:
    """Channels transformed by input task cb of a group."""
    return _block(cb, graph.partition.input_channels_per_task, graph.layer.c)


def gemm_block(graph: TaskGraph, j: int) -> tuple[slice, slice]:
    """(Winograd points, output channels) of GEMM task j of a group: j = eb*n_kb + kb."""
    eb, kb = divmod(j, graph.geometry.n_kb)
    part = graph.partition
    return (_block(eb, part.gemm_mats_per_task, graph.variant.alpha ** 2),
            _block(kb, part.gemm_k_per_task, graph.layer.k))


def output_channels(graph: TaskGraph, ob: int) -> slice:
    """Output channels written by output task ob of a group."""
    return _block(ob, graph.partition.output_channels_per_task, graph.layer.k)


def _tile_origins(tiles: np.ndarray, tiles_h: int, tiles_w: int, m: int):
    img, rest = np.divmod(np.asarray(tiles, dtype=np.int64), tiles_h * tiles_w)
    ti, tj = np.divmod(rest, tiles_w)
    return img, ti * m, tj * m


def gather_patches(x: np.ndarray, tiles: np.ndarray, tiles_hw: tuple[int, int], m: int,
                   channels: slice = slice(None)) -> np.ndarray:
    """Input patches [len(tiles)][alpha][alpha][channels] of NHWC x, zero outside the image."""
    _, h, w, _ = x.shape
    alpha = m + 2
    img, r0, c0 = _tile_origins(tiles, *tiles_hw, m)
    rows = r0[:, None] - 1 + np.arange(alpha)
    cols = c0[:, None] - 1 + np.arange(alpha)
    inside = ((rows >= 0) & (rows < h))[:, :, None] & ((cols >= 0) & (cols < w))[:, None, :]
    patch = x[img[:, None, None], np.clip(rows, 0, h - 1)[:, :, None],
              np.clip(cols, 0, w - 1)[:, None, :], channels]
    return np.where(inside[..., None], patch, np.zeros((), dtype=x.dtype))


def scatter_tiles(y: np.ndarray, values: np.ndarray, tiles: np.ndarray, tiles_hw: tuple[int, int],
                  channels: slice = slice(None)) -> None:
    """Write tile outputs [len(tiles)][m][m][channels] into NHWC y, dropping what overhangs."""
    _, h, w, _ = y.shape
    m = values.shape[1]
    img, r0, c0 = _tile_origins(tiles, *tiles_hw, m)
    rows = np.broadcast_to((r0[:, None] + np.arange(m))[:, :, None], values.shape[:3])
    cols = np.broadcast_to((c0[:, None] + np.arange(m))[:, None, :], values.shape[:3])
    keep = (rows < h) & (cols < w)
    imgs = np.broadcast_to(img[:, None, None], values.shape[:3])
    y[imgs[keep], rows[keep], cols[keep], channels] = values[keep]
