"""Heatmaps of predicted fused time over (D_IG, M) and (D_GO, M): paper Figs. 9 and 10, simulated.

A cell holds the best predicted fused time among the evaluations with that
pair of values (the other parameters free; a non-fused build has no mapping,
so it has no cell), shown as speedup over the paper's
default parameters (a diverging scale centred on 1.0) when that reference
exists, else in microseconds. Under each value: the time and how many
evaluations the cell saw, so a sparse TPE search reads as sparse; cells never
evaluated are left grey. The best cell has a solid box, the paper default a
dashed one.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from megasim.app.plot import save_figure  # noqa: E402

MIN_WIDTH_IN, MIN_HEIGHT_IN = 7.0, 4.6
PAIRS = (("dig", "m", "D_IG", "heatmap_dig_m.png", "Fig. 9"),
         ("dgo", "m", "D_GO", "heatmap_dgo_m.png", "Fig. 10"))


def grid_of(table: list[dict], x: str, y: str, xs, ys) -> tuple[np.ndarray, np.ndarray]:
    """(best fused us, evaluations) per cell; NaN where nothing was evaluated."""
    best = np.full((len(ys), len(xs)), np.nan)
    count = np.zeros((len(ys), len(xs)), dtype=int)
    xi, yi = {v: i for i, v in enumerate(xs)}, {v: i for i, v in enumerate(ys)}
    for r in table:
        if r["status"] != "ok" or r.get("fused_us") is None or r.get(x) not in xi or r.get(y) not in yi:
            continue
        j, i = xi[r[x]], yi[r[y]]
        count[i, j] += 1
        best[i, j] = np.fmin(best[i, j], r["fused_us"])
    return best, count


def plot_pair(table, space, x, y, xlabel, path, title, reference=None):
    """One heatmap; `reference` is the paper-default dict (its point and time_us) or None."""
    from matplotlib.colors import TwoSlopeNorm
    values = {p.name: p.values for p in space.params}
    xs, ys = values[x], values[y]
    best, count = grid_of(table, x, y, xs, ys)
    ref_us = (reference or {}).get("time_us")
    shown = ref_us / best if ref_us else best
    finite = shown[np.isfinite(shown)]
    # Never smaller than the title, the two-line x label and the y label need: a 2x2 space clipped them.
    size = (max(MIN_WIDTH_IN, 1.4 + 1.05 * len(xs)), max(MIN_HEIGHT_IN, 1.5 + 0.75 * len(ys)))
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    if ref_us and finite.size:
        # Diverging around 1.0: blue beats the paper default, red loses to it.
        span = max(abs(finite.max() - 1), abs(1 - finite.min()), 0.01)
        norm, cmap = TwoSlopeNorm(1.0, 1 - span, 1 + span), plt.get_cmap("RdBu")
    else:
        norm, cmap = None, plt.get_cmap("viridis_r")
    cmap = cmap.with_extremes(bad="#eeeeee")
    im = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, norm=norm, aspect="auto", origin="lower")
    for i in range(len(ys)):
        for j in range(len(xs)):
            if not count[i, j]:
                ax.text(j, i, "not evaluated", ha="center", va="center", color="#999999", fontsize=6.5)
                continue
            v = shown[i, j]
            level = im.norm(v)
            color = "white" if (level < 0.2 or level > 0.8) else "black"
            ax.text(j, i + 0.1, f"{v:.2f}x" if ref_us else f"{v:.0f}", ha="center", va="center",
                    fontsize=9, fontweight="bold", color=color)
            ax.text(j, i - 0.25, f"{best[i, j]:.0f} us, n={count[i, j]}" if ref_us else f"n={count[i, j]}",
                    ha="center", va="center", fontsize=6.5, color=color)
    if finite.size:
        i, j = np.unravel_index(np.nanargmin(best), best.shape)
        ax.add_patch(plt.Rectangle((j - 0.47, i - 0.47), 0.94, 0.94, fill=False, edgecolor="black", linewidth=2.4))
    point = (reference or {}).get("point", {})
    if point.get(x) in xs and point.get(y) in ys:
        j, i = xs.index(point[x]), ys.index(point[y])
        ax.add_patch(plt.Rectangle((j - 0.42, i - 0.42), 0.84, 0.84, fill=False, edgecolor="#555555",
                                   linewidth=1.2, linestyle="--"))
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(xlabel + "\nsolid box: best cell;  dashed box: the paper's default parameters", fontsize=9)
    ax.set_ylabel("M (task groups sharing a filter matrix)")
    ax.set_title(title, fontsize=10)
    bar = fig.colorbar(im, ax=ax, shrink=0.9)
    bar.set_label("speedup over the paper default (best in cell)" if ref_us else "predicted fused time, us (best in cell)")
    save_figure(fig, path, dpi=130)
    return path


def write_heatmaps(table, space, out, layer, gpu_name, reference=None) -> list:
    """Both heatmaps, when the strategy has D_IG, D_GO and M; [] otherwise."""
    names = {p.name for p in space.params}
    written = []
    n = sum(1 for r in table if r["status"] == "ok")
    for x, y, symbol, fname, fig in PAIRS:
        if {x, y} <= names:
            title = (f"{layer} on {gpu_name}: predicted megakernel time over ({symbol}, M), cf. paper {fig}\n"
                     f"best over the other parameters, {n} evaluations")
            written.append(plot_pair(table, space, x, y, f"{symbol} (blocks)", out / fname, title, reference))
    return written
