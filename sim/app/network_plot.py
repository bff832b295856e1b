"""The bar chart of a network run: where a network's time goes, fused against non-fused.

One pair of horizontal bars per layer of the network file, each the layer's
time multiplied by how often it occurs, so bar lengths add up to the totals
drawn underneath on the same scale. The fused/non-fused ratio sits beside
each pair, green where fusing wins. The footnote says what the totals leave
out: the convolutions the Winograd path does not cover, by reason.
"""
from __future__ import annotations

from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from megasim.app.plot import save_figure  # noqa: E402

FUSED, NONFUSED = "#2e86de", "#e67e22"
WIN, LOSS = "#1e8449", "#a93226"


def _pair(ax, y: float, fused: float, nonfused: float, width: float = 0.38) -> None:
    ax.barh(y - width / 2, fused, height=width, color=FUSED)
    ax.barh(y + width / 2, nonfused, height=width, color=NONFUSED)
    ratio = nonfused / fused
    ax.text(max(fused, nonfused) * 1.01, y, f"{ratio:.2f}x", va="center", fontsize=9,
            color=WIN if ratio > 1 else LOSS, fontweight="bold")


def _label(r: dict) -> str:
    return f"{r['name']}  x{r['count']}\n{r['c']}\u2192{r['k']} @ {r['h']}\u00d7{r['w']}" + \
        ("  (mapping file)" if r["mapping"] != "default" else "")


def _footnote(doc: dict) -> str:
    t, listed = doc["totals"], doc["uncovered"]
    if listed is None:
        return "The network file does not list the convolutions these totals leave out."
    if not listed:
        return "Every convolution of the network is 3x3 stride 1: the totals cover them all."
    reasons = Counter()
    for u in listed:
        reasons[u["reason"].split(";")[0]] += u["count"]
    parts = "; ".join(f"{n} \u00d7 {why}" for why, n in reasons.most_common())
    share = (f"The {t['covered_convs']} convolutions above are {t['covered_flop_share']:.0%} of the network's "
             "convolution FLOPs. " if t["covered_flop_share"] is not None else "")
    return (f"{share}Not in the totals: {t['uncovered_convs']} convolutions the Winograd path does not cover "
            f"({parts}).")


def _stacked(ax, y: float, values: list[float], color: str, names: list[str], height: float = 0.6) -> None:
    """One total as segments, a layer each, alternately darker, named where there is room."""
    left, end = 0.0, sum(values)
    for i, (v, name) in enumerate(zip(values, names)):
        ax.barh(y, v, left=left, height=height, color=color, alpha=1.0 if i % 2 == 0 else 0.72,
                edgecolor="white", linewidth=0.8)
        if v > 0.07 * end:
            ax.text(left + v / 2, y, name, ha="center", va="center", fontsize=7.5, color="white")
        left += v


def plot_network(doc: dict, path, title: str) -> None:
    """`doc` is `megasim.app.network.report(...)`; writes a PNG to `path`."""
    rows, t = doc["layers"], doc["totals"]
    height = 2.4 + 0.62 * len(rows) + 1.2
    top, bottom = 1 - 0.75 / height, 0.9 / height
    fig, (ax, tot) = plt.subplots(2, 1, figsize=(10, height), gridspec_kw={
        "height_ratios": [max(len(rows), 1), 1.6], "hspace": 0.85 / ((top - bottom) * height / 2)})
    for i, r in enumerate(rows):
        _pair(ax, i, r["fused_total_us"] / 1e3, r["nonfused_total_us"] / 1e3)
    ax.set_yticks(range(len(rows)), [_label(r) for r in rows], fontsize=9)
    ax.set_xlim(0, max(max(r["fused_total_us"], r["nonfused_total_us"]) for r in rows) / 1e3 * 1.1)
    ax.set_xlabel("each layer: its time \u00d7 its count (ms)", fontsize=9)
    names = [r["name"] for r in rows]
    _stacked(tot, 0, [r["fused_total_us"] / 1e3 for r in rows], FUSED, names)
    _stacked(tot, 1, [r["nonfused_total_us"] / 1e3 for r in rows], NONFUSED, names)
    ratio = t["speedup"]
    tot.text(max(t["fused_us"], t["nonfused_us"]) / 1e3 * 1.01, 0.5, f"{ratio:.2f}x", va="center", fontsize=10,
             color=WIN if ratio > 1 else LOSS, fontweight="bold")
    tot.set_yticks([0, 1], [f"fused {t['fused_us'] / 1e3:.2f} ms", f"non-fused {t['nonfused_us'] / 1e3:.2f} ms"],
                   fontsize=9)
    tot.set_xlim(0, max(t["fused_us"], t["nonfused_us"]) / 1e3 * 1.08)
    tot.set_xlabel("network total, layer by layer (ms)", fontsize=9)
    tot.set_title(f"network total: {t['covered_convs']} convolutions", fontsize=10, loc="left", fontweight="bold")
    for a in (ax, tot):
        a.invert_yaxis()
        a.grid(axis="x", alpha=0.3)
        a.set_axisbelow(True)
        a.spines[["top", "right"]].set_visible(False)
    fig.suptitle(title, x=0.01, y=1 - 0.1 / height, ha="left", va="top", fontsize=12, fontweight="bold")
    fig.text(0.01, 1 - 0.42 / height, "bars: time \u00d7 count; beside them non-fused / fused "
             "(above 1: fusing wins)", fontsize=9, color="#444444")
    fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=FUSED), plt.Rectangle((0, 0), 1, 1, color=NONFUSED)],
               labels=["fused megakernel", "non-fused (4 kernels)"], loc="upper right", ncol=2, fontsize=9,
               frameon=False, bbox_to_anchor=(0.99, 1 - 0.25 / height))
    fig.text(0.01, 0.01, _footnote(doc), fontsize=8, color="#555555", wrap=True, va="bottom")
    fig.subplots_adjust(left=0.2, right=0.95, top=top, bottom=bottom)
    save_figure(fig, path)
