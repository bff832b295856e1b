"""`megasim validate`: predict every measured run under a profile and write the report.

Outputs, all reproducible on a CPU from committed data, under `--out` (default `out/validate`;
`--out docs` rewrites the committed ones):
- `results/calibration/calibration_predictions_<gpu>.json`: per run, measured and predicted times;
- `figures/calibration_*_<gpu>.png`: predicted-vs-measured scatter, the measured per-block
  timeline against the simulated one on the same SMs;
- `calibration.md` (or `--report`): the figures, MAPE, Spearman within layers, winner calls, regret.
"""
from __future__ import annotations

import os

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from megasim.io.writing import write_then_rename
from megasim.app.calibrate.jobs import largest_first, progress
from megasim.app.calibrate.metrics import DECIDED_MARGIN, SPEARMAN_MIN_MAPPINGS, decided_winners
from megasim.app.calibrate.predict import (graph_of, mapping_of, predict_fused, predict_kernel, predict_kernel_in_graph,
                                           predict_nonfused)
from megasim.contract.problem import Op


def _predict_one(args):
    run, spec, with_nonfused = args
    row = {"layer": run["layer"]["name"], "split": run["split"], "strategy": run["strategy"],
           "params": run.get("params", {}), "fused_us": run["fused_us"], "nonfused_us": run["nonfused_us"],
           "pred_fused_us": predict_fused(run, spec)}
    if with_nonfused:
        row["pred_nonfused_us"], _ = predict_nonfused(run, spec)
        alone = predict_kernel_in_graph if run.get("nonfused_kernels_graph_us") else predict_kernel
        row["pred_kernels_us"] = [alone(run, op, spec) for op in Op]
    return row


def predict_runs(runs: list[dict], spec, jobs: int = 2, shown: bool = True) -> list[dict]:
    """One row per run; the non-fused prediction is computed once per layer and shared."""
    first = {}
    for i, run in enumerate(runs):
        first.setdefault((run["layer"]["name"], str(run["partition"])), i)
    work = [(run, spec, i in first.values()) for i, run in enumerate(runs)]
    # the measured time stands in for the simulated blocks; a layer's first run also simulates the non-fused
    # sequence and its four kernels alone
    costs = [run["fused_us"] + (2 * run["nonfused_us"] if with_nonfused else 0) for run, _, with_nonfused in work]
    with ProcessPoolExecutor(jobs) as pool, progress(f"simulating {len(work)} measured runs", len(work), shown) as tick:
        rows = largest_first(pool, _predict_one, work, costs, tick)
    shared = {(r["layer"], str(runs[i]["partition"])): r for i, r in enumerate(rows) if "pred_nonfused_us" in r}
    for i, r in enumerate(rows):
        src = shared[(r["layer"], str(runs[i]["partition"]))]
        r["pred_nonfused_us"], r["pred_kernels_us"] = src["pred_nonfused_us"], src["pred_kernels_us"]
        graphed = runs[i].get("nonfused_kernels_graph_us")
        r["nonfused_kernels_us"] = graphed or runs[i].get("nonfused_kernels_us")
        r["kernels_timed"] = "graph" if graphed else "events"
    return rows


def plot_scatter(rows, path, gpu: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from megasim.app.plot import save_figure
    fig, ax = plt.subplots(figsize=(6.4, 6))
    for kind, marker, colour in (("fused", "o", "tab:blue"), ("nonfused", "s", "tab:orange")):
        for split, fill in (("train", True), ("heldout", False)):
            sel = [r for r in rows if r["split"] == split]
            if kind == "nonfused":
                sel = list({r["layer"]: r for r in sel}.values())
            x = [r[f"{kind}_us"] for r in sel]
            y = [r[f"pred_{kind}_us"] for r in sel]
            ax.scatter(x, y, marker=marker, s=28, label=f"{'fused' if kind == 'fused' else 'non-fused'}, {split}",
                       facecolors=colour if fill else "none", edgecolors=colour, alpha=0.8)
    lo = min(min(r["fused_us"], r["pred_fused_us"], r["nonfused_us"]) for r in rows) * 0.8
    hi = max(max(r["fused_us"], r["pred_fused_us"], r["nonfused_us"]) for r in rows) * 1.25
    line = np.array([lo, hi])
    ax.plot(line, line, color="black", lw=1)
    ax.fill_between(line, line * 0.9, line * 1.1, color="grey", alpha=0.15, label="within 10%")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured (us)",
           ylabel="predicted (us)", title=f"{gpu.upper()}: simulator vs hardware, every measured run")
    ticks = [t for t in (20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000) if lo <= t <= hi]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path)


def simulated_records(run: dict, spec):
    """The run's per-block records as `simulate` predicts them (the default dispatch policy)."""
    from megasim.engine.interpreter import SimpyInterpreter
    return SimpyInterpreter(spec).run(graph_of(run), mapping_of(run)).records


def _decisions_link(report: Path) -> str:
    """docs/decisions.md linked from the report's folder in a checkout; named in words from an installed package."""
    from megasim.app.catalog import SCENARIOS
    decisions = SCENARIOS.parent / "docs" / "decisions.md"
    if not decisions.exists():
        return "docs/decisions.md in megasim's source"
    return f"[decisions.md]({Path(os.path.relpath(decisions, Path(report).resolve().parent)).as_posix()})"


def write_report(path: Path, gpu: str, command: str, summary: dict, rows: list[dict], figures: dict,
                 extra_sections: list[str]) -> None:
    """The report; `command` is the `megasim validate` line that wrote it, as given (its own paths)."""
    m = summary["mape"]
    lines = [f"# Calibration: {gpu.upper()}", "",
             f"Reproduce on any CPU: `{command}`. The decisions behind the model, with their evidence: "
             f"{_decisions_link(path)}.", "",
             "| | runs | fused MAPE | non-fused MAPE (per layer) | target |", "|---|---|---|---|---|"]
    for split in ("train", "heldout"):
        s = m[split]
        lines.append(f"| {split} | {s['runs']} | {s['fused']:.1%} | {s['nonfused']:.1%} | "
                     f"{'<= 10% held-out' if split == 'heldout' else ''} |")
    lines += ["", f"![predicted vs measured]({figures['scatter']})", "",
              f"## Per layer (Spearman over layers with >= {SPEARMAN_MIN_MAPPINGS} mappings; target >= 0.8)", "",
              "| layer | mappings | Spearman | simulator's pick | regret of the pick | winner predicted / measured |",
              "|---|---|---|---|---|---|"]
    counts = {}
    for r in rows:
        counts[r["layer"]] = counts.get(r["layer"], 0) + 1
    for name in sorted(summary["regret"]):
        sp = summary["spearman"].get(name)
        w = summary["winner"][name]
        pick = ", ".join(f"{k}={v}" for k, v in w["mapping"].items())
        lines.append(f"| {name} | {counts[name]} | {'-' if sp is None else f'{sp:.2f}'} | {pick} | "
                     f"{summary['regret'][name]:.1%} | {w['predicted']} / {w['measured']}"
                     f"{'' if w['right'] else ' (wrong)'} |")
    right = sum(w["right"] for w in summary["winner"].values())
    sure, decided = decided_winners(rows, summary)
    lines += ["", f"Winner called right on {right} of {len(summary['winner'])} layers, and on {sure} of the {decided} "
              f"whose measured margin exceeds {DECIDED_MARGIN:.0%}.", ""]
    lines += extra_sections
    with write_then_rename(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
