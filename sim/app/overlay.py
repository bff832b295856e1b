"""Measured and simulated timelines of one run on one figure, and how far apart they are per task type.

`megasim compare` and the calibration report's trace overlay both draw with
`plot_overlay`: the simulated per-SM Gantt chart above the measured one on
the same SM and time axes, then the task-type mix over time (simulated
solid, measured dashed), then utilisation: the share of SMs with a block
doing work (both), and, where the caller passes the simulation's
`RunStats.utilisation`, its DRAM and FP32 utilisation (dotted; the hardware
trace has no counters to put beside them).

`task_errors` is the table `compare` prints: per task type, the mean work
time of a block (ready to end: what the model's roofs decide) and the span
of the type (first start to last end: what the mapping and the dependencies
decide), measured against simulated; then the whole run's makespan.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from megasim.app.perfetto import op_name  # noqa: E402
from megasim.app.plot import (OP_COLORS, SPIN_GREY, _draw_gantt, _end_us, _legend_handles, _mix_edges,  # noqa: E402
                              _mix_series, _num_sms, _summary)
from megasim.io.writing import write_then_rename  # noqa: E402

SIM_STYLE, GPU_STYLE = "-", "--"


def _first_start(records: np.ndarray) -> float:
    return float(records["start_us"].min()) if len(records) else 0.0


def from_first_start(records: np.ndarray) -> np.ndarray:
    """`records` with every time counted from the first block's start: the hardware trace's clock starts
    there, the simulator's at the launch, so the two line up on the blocks' work, launch latency aside."""
    out = records.copy()
    t0 = _first_start(records)
    for field in ("dispatch_us", "start_us", "ready_us", "end_us"):
        out[field] = records[field] - t0
    return out


def busy_sms(records: np.ndarray, edges: np.ndarray, num_sms: int) -> np.ndarray:
    """Per bin, the mean share of the `num_sms` SMs with at least one block doing work (ready..end)."""
    if not len(records):
        return np.zeros(len(edges) - 1)
    busy = np.zeros(len(edges) - 1)
    width = np.diff(edges)
    for sm in np.unique(records["sm"]):
        r = records[records["sm"] == sm]
        order = np.argsort(r["ready_us"])
        starts, ends = r["ready_us"][order], r["end_us"][order]
        merged_start, merged_end = [starts[0]], [ends[0]]
        for s, e in zip(starts[1:], ends[1:]):
            if s <= merged_end[-1]:
                merged_end[-1] = max(merged_end[-1], e)
            else:
                merged_start.append(s)
                merged_end.append(e)
        a, b = np.array(merged_start), np.array(merged_end)
        overlap = np.minimum(b[None, :], edges[1:, None]) - np.maximum(a[None, :], edges[:-1, None])
        busy += np.clip(overlap, 0, None).sum(axis=1) / width
    return busy / num_sms


def task_errors(measured: np.ndarray, simulated: np.ndarray) -> list[dict]:
    """Per task type present in either run, then "all": block count, mean work time and span, each
    measured and simulated, and the relative error (simulated / measured - 1)."""
    def stats(rec):
        if not len(rec):
            return 0, float("nan"), float("nan")
        return len(rec), float((rec["end_us"] - rec["ready_us"]).mean()), float(rec["end_us"].max() - rec["start_us"].min())

    def err(sim, meas):
        return sim / meas - 1 if meas > 0 and np.isfinite(sim) and np.isfinite(meas) else float("nan")

    rows = []
    ops = sorted(set(np.unique(measured["op"]).tolist()) | set(np.unique(simulated["op"]).tolist()))
    for op, name in [(op, op_name(op)) for op in ops] + [(None, "all")]:
        m = measured if op is None else measured[measured["op"] == op]
        s = simulated if op is None else simulated[simulated["op"] == op]
        (nm, wm, sm_), (ns, ws, ss) = stats(m), stats(s)
        rows.append({"op": name, "blocks_measured": nm, "blocks_simulated": ns,
                     "work_us_measured": wm, "work_us_simulated": ws, "work_error": err(ws, wm),
                     "span_us_measured": sm_, "span_us_simulated": ss, "span_error": err(ss, sm_)})
    return rows


def format_errors(rows: list[dict]) -> str:
    """`task_errors` as the table `megasim compare` prints."""
    head = (f"{'task':>16} {'blocks':>7} {'mean work meas':>15} {'sim':>9} {'error':>8} "
            f"{'span meas':>10} {'sim':>9} {'error':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        label = "whole run" if r["op"] == "all" else r["op"]
        lines.append(f"{label:>16} {r['blocks_measured']:7d} {r['work_us_measured']:12.2f} us "
                     f"{r['work_us_simulated']:9.2f} {r['work_error']:+8.1%} {r['span_us_measured']:10.1f} "
                     f"{r['span_us_simulated']:9.1f} {r['span_error']:+8.1%}")
    return "\n".join(lines)


def _draw_mix(ax, simulated, measured, edges, mid) -> None:
    for records, style in ((simulated, SIM_STYLE), (measured, GPU_STYLE)):
        if not len(records):
            continue
        for key, counts in _mix_series(records, edges).items():
            color = SPIN_GREY if key == "spin" else OP_COLORS[key]
            ax.plot(mid, counts, style, color=color, linewidth=1.2)
    ax.set_ylabel("running blocks\n(mean per bin)")
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def _draw_utilisation(ax, simulated, measured, edges, mid, num_sms, utilisation) -> None:
    ax.plot(mid, 100 * busy_sms(simulated, edges, num_sms), SIM_STYLE, color="black", linewidth=1.2,
            label="SMs working, simulated")
    ax.plot(mid, 100 * busy_sms(measured, edges, num_sms), GPU_STYLE, color="black", linewidth=1.2,
            label="SMs working, measured")
    if utilisation:
        ax.plot(utilisation["t_us"], 100 * np.asarray(utilisation["dram"]), ":", color="#8c564b", linewidth=1.4,
                label="DRAM bandwidth, simulated")
        ax.plot(utilisation["t_us"], 100 * np.asarray(utilisation["fp32"]), ":", color="#17becf", linewidth=1.4,
                label="FP32 peak, simulated")
    ax.set_ylim(0, 105)
    ax.set_ylabel("utilisation (%)")
    ax.set_xlabel("time (µs)")
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False, fontsize=9)


def plot_overlay(measured: np.ndarray, simulated: np.ndarray, path, title: str = "simulated vs measured",
                 num_sms: int | None = None, utilisation: dict | None = None) -> None:
    """Simulated and measured per-SM timelines, task mix and utilisation on shared axes, each from its
    first block's start (`from_first_start`), to `path` (the format follows its extension: .png, .pdf, .svg)."""
    measured, simulated = from_first_start(measured), from_first_start(simulated)
    if utilisation and len(simulated) != 0:
        utilisation = {**utilisation, "t_us": np.asarray(utilisation["t_us"]) - _first_start(simulated)}
    num_sms = _num_sms(num_sms, simulated, measured)
    t_end = _end_us(simulated, measured)
    fig, (a, b, mix, use) = plt.subplots(4, 1, sharex=True, figsize=(13, 13.5),
                                         gridspec_kw={"height_ratios": [3, 3, 1.3, 1.1], "hspace": 0.08})
    _draw_gantt(a, simulated, num_sms, label="simulated")
    _draw_gantt(b, measured, num_sms, label="measured")
    a.set_xlim(0, t_end)
    a.set_title(f"{title}\nsimulated: {_summary(simulated)}\nmeasured: {_summary(measured)}", fontsize=11)
    edges, mid = _mix_edges(t_end)
    _draw_mix(mix, simulated, measured, edges, mid)
    _draw_utilisation(use, simulated, measured, edges, mid, num_sms, utilisation)
    handles = _legend_handles() + [
        plt.Line2D([], [], color="black", linestyle=SIM_STYLE, label="simulated (mix, utilisation)"),
        plt.Line2D([], [], color="black", linestyle=GPU_STYLE, label="measured (mix, utilisation)"),
        plt.Line2D([], [], color=SPIN_GREY, label="spinning (mix)")]
    a.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False, fontsize=9)
    fig.subplots_adjust(left=0.07, right=0.80, top=0.92, bottom=0.05)
    try:
        with write_then_rename(path) as tmp:
            fig.savefig(tmp, dpi=110)
    finally:
        plt.close(fig)


__all__ = ["plot_overlay", "task_errors", "format_errors", "busy_sms"]
