"""The Cook-Toom matrices compute correlation exactly, in rational arithmetic.

Checked against the definition y_i = sum_j d_{i+j} g_j (1-D) and its 2-D
nesting, on random rationals: any wrong entry in A^T, G or B^T shows up as
a non-zero Fraction difference, with no float tolerance to hide behind.
"""
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from megasim.contract.transforms import winograd_matrices

VARIANTS = [2, 4, 6]
rationals = st.fractions(min_value=-5, max_value=5, max_denominator=9)


def matmul(a, b):
    return [[sum((a[i][k] * b[k][j] for k in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def transpose(a):
    return [list(col) for col in zip(*a)]


def matvec(a, v):
    return [sum((x * y for x, y in zip(row, v)), Fraction(0)) for row in a]


@pytest.mark.parametrize("m", VARIANTS, ids=lambda m: f"F({m},3)")
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_1d_winograd_is_exact_correlation(m, data):
    mats = winograd_matrices(m)
    d = data.draw(st.lists(rationals, min_size=m + 2, max_size=m + 2))
    g = data.draw(st.lists(rationals, min_size=3, max_size=3))
    product = [u * v for u, v in zip(matvec(mats.G, g), matvec(mats.BT, d))]
    expected = [sum((d[i + j] * g[j] for j in range(3)), Fraction(0)) for i in range(m)]
    assert matvec(mats.AT, product) == expected


@pytest.mark.parametrize("m", VARIANTS, ids=lambda m: f"F({m}x{m},3x3)")
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_2d_winograd_is_exact_correlation(m, data):
    mats = winograd_matrices(m)
    alpha = m + 2
    d = data.draw(st.lists(st.lists(rationals, min_size=alpha, max_size=alpha), min_size=alpha, max_size=alpha))
    g = data.draw(st.lists(st.lists(rationals, min_size=3, max_size=3), min_size=3, max_size=3))
    u = matmul(matmul(mats.G, g), transpose(mats.G))
    v = matmul(matmul(mats.BT, d), transpose(mats.BT))
    hadamard = [[a * b for a, b in zip(ru, rv)] for ru, rv in zip(u, v)]
    y = matmul(matmul(mats.AT, hadamard), transpose(mats.AT))
    expected = [[sum((d[i + r][j + s] * g[r][s] for r in range(3) for s in range(3)), Fraction(0))
                 for j in range(m)] for i in range(m)]
    assert y == expected


@pytest.mark.parametrize("m", VARIANTS)
def test_one_multiplication_per_point(m):
    """F(m, 3) uses alpha = m + 2 products: the shapes that make it a minimal algorithm."""
    mats = winograd_matrices(m)
    n = m + 2
    assert (len(mats.AT), len(mats.AT[0])) == (m, n)
    assert (len(mats.G), len(mats.G[0])) == (n, 3)
    assert (len(mats.BT), len(mats.BT[0])) == (n, n)
