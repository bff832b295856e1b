"""Exact Winograd transform matrices for F(m x m, 3 x 3), built by Cook-Toom.

The 1-D algorithm F(m, r) computes m outputs of a correlation with an r-tap
filter from n = m + r - 1 inputs using n multiplications. It is the transpose
of the linear-convolution algorithm "evaluate both polynomials at n points,
multiply pointwise, interpolate": with evaluation matrices E_x (n x m),
E_g (n x r) and the Vandermonde interpolation V (n x n), the correlation is

    y = E_x^T [ (E_g g) . (V^-T d) ]     so   A^T = E_x^T, G = E_g, B^T = V^-T.

One point is infinity: its row picks the leading coefficient. The diagonal
scale of each point is moved from G into B^T so B^T is integral, the form
used by Lavin & Gray and by cuDNN-style kernels. Everything is exact
(`fractions.Fraction`); floats are derived from it.

Both executors and the task graph's FLOP counts read these matrices, so they
live in the contract package rather than in gpu/.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import lcm

import numpy as np

R = 3
_INF = None
POINTS: dict[int, tuple] = {
    2: (Fraction(0), Fraction(1), Fraction(-1), _INF),
    4: (Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2), _INF),
    6: (Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2),
        Fraction(1, 2), Fraction(-1, 2), _INF),
}

Matrix = tuple[tuple[Fraction, ...], ...]


@dataclass(frozen=True)
class WinogradMatrices:
    """A^T (m x n), G (n x r), B^T (n x n) for F(m, r), exact."""

    m: int
    AT: Matrix
    G: Matrix
    BT: Matrix

    @property
    def alpha(self) -> int:
        return self.m + R - 1

    def as_float(self, dtype=np.float64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A^T, G, B^T) as float arrays."""
        return tuple(np.array([[float(x) for x in row] for row in mat], dtype=dtype)
                     for mat in (self.AT, self.G, self.BT))

    def nonzeros(self) -> tuple[int, int, int]:
        """Non-zero counts of (A^T, G, B^T): the FLOP counts follow them."""
        return tuple(sum(1 for row in mat for x in row if x != 0)
                     for mat in (self.AT, self.G, self.BT))


def _evaluation(points, width: int) -> list[list[Fraction]]:
    rows = []
    for a in points:
        if a is _INF:
            rows.append([Fraction(int(i == width - 1)) for i in range(width)])
        else:
            rows.append([a ** i for i in range(width)])
    return rows


def _inverse(mat: list[list[Fraction]]) -> list[list[Fraction]]:
    """Gauss-Jordan inverse in exact arithmetic."""
    n = len(mat)
    aug = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(mat)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[pivot] = aug[pivot], aug[col]
        p = aug[col][col]
        aug[col] = [x / p for x in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


def _freeze(mat) -> Matrix:
    return tuple(tuple(row) for row in mat)


@lru_cache(maxsize=None)
def winograd_matrices(m: int) -> WinogradMatrices:
    """Cook-Toom matrices for F(m, 3) at the standard points 0, +-1, +-2, +-1/2, inf."""
    if m not in POINTS:
        raise ValueError(f"Winograd variant m={m} is not supported; choose one of {sorted(POINTS)}")
    points = POINTS[m]
    n = m + R - 1
    ex = _evaluation(points, m)
    eg = _evaluation(points, R)
    vinv = _inverse(_evaluation(points, n))
    bt = [[vinv[j][i] for j in range(n)] for i in range(n)]
    for i in range(n):
        scale = lcm(*(x.denominator for x in bt[i]))
        bt[i] = [x * scale for x in bt[i]]
        eg[i] = [x / scale for x in eg[i]]
    at = [[ex[j][i] for j in range(n)] for i in range(m)]
    return WinogradMatrices(m=m, AT=_freeze(at), G=_freeze(eg), BT=_freeze(bt))


@dataclass(frozen=True)
class TransformFlops:
    """FP32 FLOPs of one transform, counting only the non-zero matrix entries (FMA = 2)."""

    filter_per_kc: int
    input_per_tile_channel: int
    output_per_tile_channel: int


@lru_cache(maxsize=None)
def transform_flops(m: int) -> TransformFlops:
    nz_at, nz_g, nz_bt = winograd_matrices(m).nonzeros()
    n = m + R - 1
    return TransformFlops(
        filter_per_kc=2 * nz_g * R + 2 * nz_g * n,
        input_per_tile_channel=2 * nz_bt * n * 2,
        output_per_tile_channel=2 * nz_at * n + 2 * nz_at * m,
    )
