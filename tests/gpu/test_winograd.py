"""The NumPy references: layout helpers, the direct convolution, the whole-layer Winograd conv.

The direct convolution is checked against answers worked out by hand (a
delta filter copies or shifts the image, an all-ones filter counts the
in-image neighbours) and against the textbook sum; the Winograd conv is then
checked against it.
"""
import numpy as np
import pytest

from megasim.gpu.layout import gather_patches, scatter_tiles
from megasim.gpu.winograd import (direct_conv, kcrs_to_krsc, krsc_to_kcrs, nchw_to_nhwc, nhwc_to_nchw,
                          tile_grid, winograd_conv)

VARIANTS = [2, 4, 6]


def test_layout_conversions_move_axes():
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    nhwc = nchw_to_nhwc(x)
    assert nhwc.shape == (2, 4, 5, 3) and nhwc[1, 2, 3, 0] == x[1, 0, 2, 3]
    assert np.array_equal(nhwc_to_nchw(nhwc), x)
    w = np.arange(6 * 2 * 3 * 3).reshape(6, 2, 3, 3)
    krsc = kcrs_to_krsc(w)
    assert krsc.shape == (6, 3, 3, 2) and krsc[5, 0, 2, 1] == w[5, 1, 0, 2]
    assert np.array_equal(krsc_to_kcrs(krsc), w)


def test_centre_delta_filter_is_identity():
    x = np.random.default_rng(0).standard_normal((2, 5, 7, 3))
    w = np.zeros((3, 3, 3, 3))
    w[:, 1, 1, :] = np.eye(3)
    assert np.array_equal(direct_conv(x, w), x)


def test_corner_delta_filter_shifts_with_zero_padding():
    """Tap (0, 0) reads the pixel up and to the left: y[i, j] = x[i-1, j-1], zero on row/col 0."""
    x = np.random.default_rng(1).standard_normal((1, 4, 6, 1))
    w = np.zeros((1, 3, 3, 1))
    w[0, 0, 0, 0] = 1.0
    y = direct_conv(x, w)
    assert np.array_equal(y[0, 1:, 1:, 0], x[0, :-1, :-1, 0])
    assert not y[0, 0, :, 0].any() and not y[0, :, 0, 0].any()


def test_box_filter_counts_in_image_neighbours():
    y = direct_conv(np.ones((1, 4, 5, 2)), np.ones((1, 3, 3, 2)))[0, :, :, 0]
    expected = 2 * np.array([[4, 6, 6, 6, 4], [6, 9, 9, 9, 6], [6, 9, 9, 9, 6], [4, 6, 6, 6, 4]])
    assert np.array_equal(y, expected)


def test_direct_conv_matches_textbook_sum():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3, 4, 2)), rng.standard_normal((3, 3, 3, 2))
    n, h, wd, c = x.shape
    y = np.zeros((n, h, wd, 3))
    for b, i, j, k, r, s, ch in np.ndindex(n, h, wd, 3, 3, 3, c):
        if 0 <= i + r - 1 < h and 0 <= j + s - 1 < wd:
            y[b, i, j, k] += x[b, i + r - 1, j + s - 1, ch] * w[k, r, s, ch]
    np.testing.assert_allclose(direct_conv(x, w), y, rtol=1e-13, atol=1e-13)


def test_patches_are_padded_windows_and_scatter_drops_overhang():
    x = np.arange(1 * 5 * 6 * 1, dtype=float).reshape(1, 5, 6, 1) + 1
    grid = tile_grid(5, 6, 4)
    assert grid == (2, 2)
    patches = gather_patches(x, np.arange(4), grid, 4)
    xp = np.pad(x[0, :, :, 0], ((1, 4), (1, 3)))
    for tile, (ti, tj) in enumerate(np.ndindex(*grid)):
        assert np.array_equal(patches[tile, :, :, 0], xp[4 * ti:4 * ti + 6, 4 * tj:4 * tj + 6])
    y = np.zeros((1, 5, 6, 1))
    scatter_tiles(y, np.ones((4, 4, 4, 1)), np.arange(4), grid)
    assert np.array_equal(y, np.ones_like(y))


SHAPES = [(2, 8, 8, 3, 4), (1, 7, 5, 3, 2), (1, 1, 3, 2, 3), (2, 13, 11, 4, 5)]


@pytest.mark.parametrize("m", VARIANTS, ids=lambda m: f"F({m},3)")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "N{}H{}W{}C{}K{}".format(*s))
def test_winograd_conv_matches_direct(m, shape):
    n, h, w, c, k = shape
    rng = np.random.default_rng([m, *shape])
    x, f = rng.standard_normal((n, h, w, c)), rng.standard_normal((k, 3, 3, c))
    ref = direct_conv(x, f)
    np.testing.assert_allclose(winograd_conv(x, f, m), ref, rtol=1e-11, atol=1e-12)
    y32 = winograd_conv(x, f, m, np.float32)
    assert y32.dtype == np.float32
    scale = np.linalg.norm(direct_conv(np.abs(x), np.abs(f)))
    assert np.linalg.norm(y32 - ref) <= 1e-5 * scale
