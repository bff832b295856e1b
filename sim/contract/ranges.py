"""What every task reads and writes: index ranges into the six buffers, defined once.

The convolution's output is cut into m x m tiles, numbered row-major over
(image, tile row, tile column). Tile (ti, tj) writes output rows ti*m ..
ti*m+m-1 and reads the alpha x alpha input patch whose top-left corner is
row ti*m-1, column tj*m-1, because pad 1 shifts the 3x3 window up and left
by one. Edge tiles hang over the image: reads there are zero and writes are
dropped, which is how ragged H and W are handled without a second code path.

The intermediate buffers put the Winograd point e = row*alpha + col first, so
a GEMM task's operands are alpha^2 independent, contiguous matrices:

    x [N][H][W][C]             input (NHWC)
    w [K][3][3][C]             filters (KRSC)
    U [alpha^2][C][K]          transformed filters
    V [alpha^2][num_tiles][C]  transformed inputs
    M [alpha^2][num_tiles][K]  their products
    y [N][H][W][K]             output (NHWC)

Every task owns one block of one or two axes (`Blocks`, the last block may
be short):

    filter f        reads w[ks]                       writes U[:, :, ks]          ks = filter_k[f]
    input (g, cb)   reads the patches of tiles[g], cs writes V[:, tiles[g], cs]   cs = input_c[cb]
    GEMM (g, j)     reads V[es, tiles[g], :],         writes M[es, tiles[g], ks]  es, ks = gemm_block(j)
                          U[es, :, ks]
    output (g, ob)  reads M[:, tiles[g], ks]          writes y at tiles[g], ks    ks = output_k[ob]

The input patches and output pixels of a group are boxes, one per run of
its tiles that share a tile row (`TileRuns`). The L2 model's regions
(`megasim.contract.regions`) count bytes from these ranges for all tasks at
once; the NumPy emulator and the CUDA host code index with them one task at
a time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from megasim.contract.problem import Layer, Partition, WinogradVariant

HALO = 1  # pad 1: a tile's input patch starts one row and one column before its output


@dataclass(frozen=True)
class Blocks:
    """An axis of `total` elements cut into blocks of `size`; the last block may be short."""

    total: int
    size: int

    @property
    def count(self) -> int:
        return -(-self.total // self.size)

    def __getitem__(self, i: int) -> slice:
        if not 0 <= i < self.count:
            raise IndexError(f"block {i} of {self.count}")
        return slice(i * self.size, min((i + 1) * self.size, self.total))

    def starts(self) -> np.ndarray:
        return np.arange(self.count, dtype=np.int64) * self.size

    def sizes(self) -> np.ndarray:
        return np.minimum(self.size, self.total - self.starts())

    def overlap(self, other: Blocks) -> np.ndarray:
        """Elements block i of self shares with block j of other, as [self.count, other.count]."""
        lo, hi = self.starts(), self.starts() + self.sizes()
        olo, ohi = other.starts(), other.starts() + other.sizes()
        shared = np.minimum(hi[:, None], ohi[None, :]) - np.maximum(lo[:, None], olo[None, :])
        return np.clip(shared, 0, None)


@dataclass(frozen=True, eq=False)
class TileRuns:
    """Maximal runs of a group's tiles inside one tile row, in tile order.

    Columns are [start, stop); `in_*` is the run's input box clipped to the
    image, `out_*` its output box. A group spanning several tile rows has
    one run per row, and neighbouring runs' input boxes share halo rows.
    """

    group: np.ndarray
    image: np.ndarray
    in_rows: tuple[np.ndarray, np.ndarray]
    in_cols: tuple[np.ndarray, np.ndarray]
    out_rows: tuple[np.ndarray, np.ndarray]
    out_cols: tuple[np.ndarray, np.ndarray]

    def output_pixels_per_group(self) -> np.ndarray:
        """Output pixels each group writes: ragged edge tiles write fewer than m^2."""
        area = (self.out_rows[1] - self.out_rows[0]) * (self.out_cols[1] - self.out_cols[0])
        return np.add.reduceat(area, np.flatnonzero(np.diff(self.group, prepend=-1)))


def tile_origins(tiles: np.ndarray, tiles_h: int, tiles_w: int, m: int):
    """(image, first output row, first output column) of each tile id."""
    img, rest = np.divmod(np.asarray(tiles, dtype=np.int64), tiles_h * tiles_w)
    ti, tj = np.divmod(rest, tiles_w)
    return img, ti * m, tj * m


@dataclass(frozen=True)
class DataRanges:
    """Every task's index ranges, from the layer, the variant and the partition."""

    layer: Layer
    variant: WinogradVariant
    tiles: Blocks      # tile ids of each task group
    filter_k: Blocks   # filters of each filter-transform task
    input_c: Blocks    # channels of each input-transform task
    points: Blocks     # Winograd points of each GEMM task's point block
    gemm_k: Blocks     # output channels of each GEMM task's channel block
    output_k: Blocks   # output channels of each output-transform task

    @staticmethod
    def of(layer: Layer, variant: WinogradVariant, part: Partition) -> DataRanges:
        th, tw = variant.tiles(layer)
        return DataRanges(layer=layer, variant=variant,
                          tiles=Blocks(layer.n * th * tw, part.tiles_per_group),
                          filter_k=Blocks(layer.k, part.filter_k_per_task),
                          input_c=Blocks(layer.c, part.input_channels_per_task),
                          points=Blocks(variant.alpha ** 2, part.gemm_mats_per_task),
                          gemm_k=Blocks(layer.k, part.gemm_k_per_task),
                          output_k=Blocks(layer.k, part.output_channels_per_task))

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of x, w, U, V, M and y."""
        layer, a2, tiles = self.layer, self.points.total, self.tiles.total
        return {"x": (layer.n, layer.h, layer.w, layer.c), "w": (layer.k, 3, 3, layer.c),
                "U": (a2, layer.c, layer.k), "V": (a2, tiles, layer.c), "M": (a2, tiles, layer.k),
                "y": (layer.n, layer.h, layer.w, layer.k)}

    def gemm_block(self, j: int) -> tuple[slice, slice]:
        """(Winograd points, output channels) of GEMM task j of a group: j = eb * n_kb + kb."""
        eb, kb = divmod(j, self.gemm_k.count)
        return self.points[eb], self.gemm_k[kb]

    def tile_runs(self) -> TileRuns:
        """Every group's runs, all groups at once: a run breaks at a group or a tile-row boundary."""
        th, tw = self.variant.tiles(self.layer)
        total, per_group = self.tiles.total, self.tiles.size
        starts = np.zeros(total, dtype=bool)  # not np.union1d: its unique() imports numpy.ma, 15 ms of start-up
        starts[::per_group] = starts[::tw] = True
        breaks = np.flatnonzero(starts)
        length = np.diff(np.append(breaks, total))
        img, r0, c0 = tile_origins(breaks, th, tw, self.variant.m)
        m, h, w = self.variant.m, self.layer.h, self.layer.w
        c1 = c0 + length * m
        return TileRuns(group=breaks // per_group, image=img,
                        in_rows=(np.maximum(0, r0 - HALO), np.minimum(h, r0 + m + HALO)),
                        in_cols=(np.maximum(0, c0 - HALO), np.minimum(w, c1 + HALO)),
                        out_rows=(r0, np.minimum(h, r0 + m)), out_cols=(c0, np.minimum(w, c1)))


__all__ = ["HALO", "Blocks", "DataRanges", "TileRuns", "tile_origins"]
