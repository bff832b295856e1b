"""Moving data between NHWC images and per-tile patches, for the NumPy executors.

Which tiles and channels a task owns is the contract's
(`megasim.contract.ranges`); these two helpers turn a list of tile ids into
the alpha x alpha input patches they read and put m x m outputs back,
reading zeros and dropping writes where an edge tile hangs over the image.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.ranges import HALO, tile_origins


def gather_patches(x: np.ndarray, tiles: np.ndarray, tiles_hw: tuple[int, int], m: int,
                   channels: slice = slice(None)) -> np.ndarray:
    """Input patches [len(tiles)][alpha][alpha][channels] of NHWC x, zero outside the image."""
    _, h, w, _ = x.shape
    alpha = m + 2
    img, r0, c0 = tile_origins(tiles, *tiles_hw, m)
    rows = r0[:, None] - HALO + np.arange(alpha)
    cols = c0[:, None] - HALO + np.arange(alpha)
    inside = ((rows >= 0) & (rows < h))[:, :, None] & ((cols >= 0) & (cols < w))[:, None, :]
    patch = x[img[:, None, None], np.clip(rows, 0, h - 1)[:, :, None],
              np.clip(cols, 0, w - 1)[:, None, :], channels]
    return np.where(inside[..., None], patch, np.zeros((), dtype=x.dtype))


def scatter_tiles(y: np.ndarray, values: np.ndarray, tiles: np.ndarray, tiles_hw: tuple[int, int],
                  channels: slice = slice(None)) -> None:
    """Write tile outputs [len(tiles)][m][m][channels] into NHWC y, dropping what overhangs."""
    _, h, w, _ = y.shape
    m = values.shape[1]
    img, r0, c0 = tile_origins(tiles, *tiles_hw, m)
    rows = np.broadcast_to((r0[:, None] + np.arange(m))[:, :, None], values.shape[:3])
    cols = np.broadcast_to((c0[:, None] + np.arange(m))[:, None, :], values.shape[:3])
    keep = (rows < h) & (cols < w)
    imgs = np.broadcast_to(img[:, None, None], values.shape[:3])
    y[imgs[keep], rows[keep], cols[keep], channels] = values[keep]
