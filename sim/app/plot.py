"""Timelines of per-thread-block records, as in paper Fig. 3.

The top panel is a Gantt chart: a row per SM, and inside it one lane per
resident block slot, so blocks running side by side on an SM don't hide each
other. A block is a bar coloured by its task type; its spin (start..ready,
waiting on a dependency counter) is the same colour washed out. The bottom
panel is the task-type mix over time: how many blocks of each op are doing
work, stacked, with the spinning ones on top in grey.

Tens of thousands of blocks are drawn as one PolyCollection per colour, not
an artist per bar, so a VGG-scale record (40k blocks on 132 SMs) renders in
a second or two. Every figure goes to a temporary file renamed into place.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from pathlib import Path  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from megasim.io.writing import write_then_rename  # noqa: E402
from megasim.app.outputs import FIGURE_FORMATS  # noqa: E402
from megasim.app.perfetto import op_name, resident_slots  # noqa: E402
from megasim.contract.problem import Op  # noqa: E402

OP_COLORS = {Op.FILTER_TRANSFORM: "#8e44ad", Op.INPUT_TRANSFORM: "#2e86de",
             Op.GEMM: "#27ae60", Op.OUTPUT_TRANSFORM: "#e67e22"}
SPIN_GREY = "#9a9a9a"
MIX_BINS = 400
HATCH_BELOW = 1500  # blocks; hatching tens of thousands of bars costs seconds and shows nothing


def _wash(color, amount=0.6):
    r, g, b, _ = to_rgba(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount, 1.0)


def _bars(x0, x1, y0, height):
    """(n, 4, 2) rectangle vertices for PolyCollection."""
    verts = np.empty((len(x0), 4, 2))
    verts[:, 0, 0] = verts[:, 1, 0] = x0
    verts[:, 2, 0] = verts[:, 3, 0] = x1
    verts[:, 0, 1] = verts[:, 3, 1] = y0
    verts[:, 1, 1] = verts[:, 2, 1] = y0 + height
    return verts


def _draw_gantt(ax, records: np.ndarray, num_sms: int, label: str | None = None) -> None:
    if len(records):
        lane, lanes = resident_slots(records)
        height = 0.9 / lanes
        y0 = records["sm"] - 0.45 + lane * height
        hatch = "////" if len(records) < HATCH_BELOW else None
        for op in np.unique(records["op"]):
            m = records["op"] == op
            color = OP_COLORS.get(int(op), "#555555")
            r, y = records[m], y0[m]
            work = _bars(r["ready_us"], r["end_us"], y, height)
            ax.add_collection(PolyCollection(work, facecolors=color, edgecolors="none",
                                             antialiased=False, rasterized=True))
            s = r["ready_us"] > r["start_us"]
            if s.any():
                spin = _bars(r["start_us"][s], r["ready_us"][s], y[s], height)
                ax.add_collection(PolyCollection(
                    spin, facecolors=[_wash(color)], edgecolors=[_wash(color, 0.2)] if hatch else "none",
                    linewidths=0, hatch=hatch, antialiased=False, rasterized=True))
    ax.set_ylim(num_sms - 0.5, -0.5)
    ax.set_ylabel("SM" if label is None else f"{label}\nSM")
    step = max(1, int(np.ceil(num_sms / 12 / 4)) * 4) if num_sms > 16 else 1
    ax.set_yticks(range(0, num_sms, step))
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _mean_running(records: np.ndarray, edges: np.ndarray, begin: str, finish: str) -> np.ndarray:
    """Mean number of records with begin <= t < finish over each bin between `edges`.

    Exact: the integral of the running count up to t is the sum over records
    of (t - begin)+ - (t - finish)+, which sorted prefix sums give at once.
    """
    def integral(times: np.ndarray) -> np.ndarray:
        s = np.sort(times)
        before = np.searchsorted(s, edges, side="right")
        prefix = np.concatenate(([0.0], np.cumsum(s)))
        return before * edges - prefix[before]
    return np.diff(integral(records[begin]) - integral(records[finish])) / np.diff(edges)


def _mix_series(records: np.ndarray, edges: np.ndarray) -> dict:
    """Per op, blocks doing work; under "spin", blocks waiting on parents (bin means)."""
    series = {}
    for op in Op:
        r = records[records["op"] == op]
        if len(r):
            series[op] = _mean_running(r, edges, "ready_us", "end_us")
    series["spin"] = _mean_running(records, edges, "start_us", "ready_us")
    return series


def _mix_edges(t_end: float) -> tuple[np.ndarray, np.ndarray]:
    edges = np.linspace(0.0, t_end, MIX_BINS + 1)
    return edges, 0.5 * (edges[1:] + edges[:-1])


def _draw_mix(ax, records: np.ndarray, t_end: float) -> None:
    edges, mid = _mix_edges(t_end)
    series = _mix_series(records, edges) if len(records) else {"spin": np.zeros_like(mid)}
    keys = [k for k in Op if k in series] + ["spin"]
    colors = [OP_COLORS[k] for k in keys[:-1]] + [SPIN_GREY]
    labels = [op_name(k) for k in keys[:-1]] + ["spinning"]
    ax.stackplot(mid, [series[k] for k in keys], colors=colors, labels=labels, linewidth=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False, fontsize=9,
              title="blocks, mean per bin", title_fontsize=9, reverse=True)
    ax.set_ylabel("running blocks")
    ax.set_xlabel("time (µs)")
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _legend_handles() -> list:
    handles = [Patch(facecolor=OP_COLORS[op], label=op_name(op)) for op in Op]
    handles.append(Patch(facecolor=_wash(OP_COLORS[Op.GEMM]), edgecolor=_wash(OP_COLORS[Op.GEMM], 0.2),
                         hatch="////", label="spin: waiting on\nparents (lighter)"))
    return handles


def _end_us(*record_sets) -> float:
    ends = [float(r["end_us"].max()) for r in record_sets if len(r)]
    return max(ends) * 1.01 if ends and max(ends) > 0 else 1.0


def _num_sms(num_sms, *record_sets) -> int:
    if num_sms:
        return int(num_sms)
    seen = [int(r["sm"].max()) + 1 for r in record_sets if len(r)]
    return max(seen) if seen else 1


def save_figure(fig, path, dpi: int = 110) -> None:
    """Every figure megasim writes, renamed into place and closed: PDF or SVG where the name says so, else PNG."""
    fmt = FIGURE_FORMATS.get(Path(path).suffix.lower(), "png")
    try:
        with write_then_rename(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=fmt)
    finally:
        plt.close(fig)


def _summary(records: np.ndarray, time_us: float | None = None) -> str:
    """Blocks, time and spin share; `time_us` is the kernel's time as `simulate`'s table prints it (with
    launch and drain), else the last block's end."""
    if not len(records):
        return "no blocks"
    work = float((records["end_us"] - records["ready_us"]).sum())
    spin = float((records["ready_us"] - records["start_us"]).sum())
    share = spin / (work + spin) if work + spin > 0 else 0.0
    time = f"megakernel {time_us:.1f} µs" if time_us is not None else f"makespan {records['end_us'].max():.1f} µs"
    return f"{len(records):,} blocks, {time}, spin {share:.0%} of block time"


def _draw_utilisation(ax, utilisation: dict) -> None:
    ax.plot(utilisation["t_us"], 100 * utilisation["dram"], color="#8c564b", label="DRAM bandwidth")
    ax.plot(utilisation["t_us"], 100 * utilisation["fp32"], color="#17becf", label="FP32 peak")
    ax.set_ylim(0, 105)
    ax.set_ylabel("utilisation (%)")
    ax.set_xlabel("time (µs)")
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False, fontsize=9)


def plot_timeline(records: np.ndarray, path, title: str = "", num_sms: int | None = None,
                  utilisation: dict | None = None, time_us: float | None = None) -> None:
    """Per-SM timeline above the task-type mix over time (and, if given, DRAM/FP32 utilisation) to `path`
    (PNG, PDF or SVG by its extension); `time_us` is the time the title gives (see `_summary`)."""
    num_sms = _num_sms(num_sms, records)
    t_end = _end_us(records)
    rows = 3 if utilisation else 2
    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(13, 8.5 + 2.2 * (rows - 2)),
                             gridspec_kw={"height_ratios": [3, 1.1, 1.0][:rows], "hspace": 0.06})
    top, bottom = axes[0], axes[1]
    _draw_gantt(top, records, num_sms)
    top.set_xlim(0, t_end)
    summary = _summary(records, time_us)
    top.set_title(f"{title}\n{summary}" if title else summary, fontsize=11)
    top.legend(handles=_legend_handles(), loc="upper left", bbox_to_anchor=(1.005, 1.0),
               frameon=False, fontsize=9)
    _draw_mix(bottom, records, t_end)
    if utilisation:
        bottom.set_xlabel("")
        _draw_utilisation(axes[2], utilisation)
    fig.subplots_adjust(left=0.06, right=0.83, top=0.93, bottom=0.07)
    save_figure(fig, path)
