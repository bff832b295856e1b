"""NumPy references: direct convolution, the three Winograd transforms, a whole-layer Winograd conv.

Every GPU result is judged against `direct_conv`, computed in float64 from
the definition (a sum of nine shifted channel contractions), so it shares no
code with the Winograd path it checks. `winograd_conv` runs the same
algorithm as the megakernel but as one big task: transform all filters,
transform all input tiles, one batched GEMM per Winograd point, transform
back. The emulator's per-task functions call the same three transforms on
slices, so a disagreement between the two isolates the task split.

Layouts follow the paper: activations NHWC, filters [K][3][3][C] (KRSC).
The exact Cook-Toom matrices come from `sim.transforms`; here they are only
rounded to the working dtype.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from megasim.gpu.layout import gather_patches, scatter_tiles
from megasim.contract.transforms import winograd_matrices


def nchw_to_nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def nhwc_to_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def kcrs_to_krsc(w: np.ndarray) -> np.ndarray:
    """PyTorch/cuDNN filter order [K][C][3][3] -> ours [K][3][3][C]."""
    return np.ascontiguousarray(w.transpose(0, 2, 3, 1))


def krsc_to_kcrs(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(w.transpose(0, 3, 1, 2))


def direct_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3, stride 1, pad 1 cross-correlation in float64: NHWC x, KRSC w -> NHWC y."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    n, h, wd, c = x.shape
    if w.shape[1:] != (3, 3, c):
        raise ValueError(f"filters must be [K][3][3][{c}], got {list(w.shape)}")
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    y = np.zeros((n, h, wd, w.shape[0]))
    for r in range(3):
        for s in range(3):
            y += xp[:, r:r + h, s:s + wd, :] @ w[:, r, s, :].T
    return y


@lru_cache(maxsize=None)
def transform_matrices(m: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T, G, B^T) of F(m, 3) rounded once to `dtype`; read-only because they are shared."""
    mats = winograd_matrices(m).as_float(np.dtype(dtype))
    for a in mats:
        a.setflags(write=False)
    return mats


def filter_transform(g: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Filters [K][3][3][C] -> U [alpha^2][C][K], U[e] = (G g G^T)[e]."""
    k, _, _, c = g.shape
    alpha = G.shape[0]
    u = np.einsum("ar,krsc,bs->abck", G, g, G, optimize=True)
    return u.reshape(alpha * alpha, c, k)


def input_transform(d: np.ndarray, BT: np.ndarray) -> np.ndarray:
    """Patches [T][alpha][alpha][C] -> V [alpha^2][T][C], V[e] = (B^T d B)[e]."""
    t, alpha, _, c = d.shape
    v = np.einsum("ai,tijc,bj->abtc", BT, d, BT, optimize=True)
    return v.reshape(alpha * alpha, t, c)


def output_transform(mt: np.ndarray, AT: np.ndarray) -> np.ndarray:
    """Products [alpha^2][T][K] -> tile outputs [T][m][m][K] = A^T M A."""
    alpha = AT.shape[1]
    _, t, k = mt.shape
    return np.einsum("ia,abtk,jb->tijk", AT, mt.reshape(alpha, alpha, t, k), AT, optimize=True)


def tile_grid(h: int, w: int, m: int) -> tuple[int, int]:
    """Tile rows and columns; ragged edges round up."""
    return -(-h // m), -(-w // m)


def winograd_conv(x: np.ndarray, w: np.ndarray, m: int, dtype=np.float64) -> np.ndarray:
    """Whole-layer F(m x m, 3 x 3) convolution: NHWC x, KRSC w -> NHWC y in `dtype`."""
    AT, G, BT = transform_matrices(m, dtype)
    x = np.asarray(x, dtype=dtype)
    w = np.asarray(w, dtype=dtype)
    n, h, wd, _ = x.shape
    grid = tile_grid(h, wd, m)
    tiles = np.arange(n * grid[0] * grid[1])
    u = filter_transform(w, G)
    v = input_transform(gather_patches(x, tiles, grid, m), BT)
    y = np.zeros((n, h, wd, w.shape[0]), dtype=dtype)
    scatter_tiles(y, output_transform(v @ u, AT), tiles, grid)
    return y
