"""What the per-block trace sample says about the megakernel's own costs and about co-resident blocks.

    python docs/results/trace_sample/analyse.py docs/results/trace_sample/h100

Reads the folder's GPU's packed sample, `scenarios/calibrations/raw/<folder name>_trace_sample.npz` (written by
pack.py from run_device.py's traces), and `summary.json` in that folder, and
writes `analysis.md` and `gemm_corunners.png` there. Three measurements, each straight from the traces:

1. The megakernel's per-task cost before work: start (before the ticket) to ready (dependencies read), for
   blocks whose counters were all zero when they started, by how many counters the task polls; and the gap
   on an SM between a block's end and the next block's start there (static, persistent, ready queue).
2. A GEMM block's work (ready to end) against how many GEMM blocks worked beside it on its SM (overlap-
   weighted, itself included), fused and non-fused: processor sharing of the SM's FP32 rate would make it
   proportional to that count.
3. Input-transform blocks' work in the megakernel against the non-fused kernel, case by case.
4. The GEMM block law work = fixed + steps x step + n x issued FLOPs / (efficiency x SM peak), n as in 2,
   fitted by least squares on relative error with every (case, launch) weighted alike: the constants
   the law `resident_sharing` needs for the GEMM (`gemm_law.json`).
5. The output block law, the same with every block on the SM in n and a chip-wide term for the other
   output blocks' bytes (`output_law.json`; docs/decisions.md, "The output transform from its block law").
6. The GEMM law of 4 fitted on each GEMM body alone (`gemm_body_laws.json`; docs/decisions.md, "One GEMM law per GEMM body").
"""
import json
import sys
from pathlib import Path

import numpy as np

from megasim.app.calibrate.trace_law import (gemm_body_laws, gemm_corunners, gemm_law, graph_of, load_sample, output_law,
                                             slot_gaps, start_costs)
from megasim.contract.problem import Op

CLOCK_MHZ = 1980.0  # the H100's and H200's sustained SM clock (scenarios/calibrations)
SM_PEAK = 256  # FP32 FLOPs per cycle per SM on Hopper


RAW = Path(__file__).resolve().parents[3] / "scenarios" / "calibrations" / "raw"  # the packed samples


def main(folder: Path) -> int:
    meta, traces = load_sample(RAW / f"{folder.name}_trace_sample.npz")
    summary = {r["case"]: r for r in json.loads((folder / "summary.json").read_text())}
    rng = np.random.default_rng(0)
    lines = [f"# Per-block trace sample: {folder.name}", "",
             f"{len(meta)} cases (`summary.json`), written by `analyse.py`. Times in us.", ""]
    by_polled, gaps = {0: [], 1: [], 2: []}, {}
    rows = []
    for case, m in meta.items():
        g = graph_of(m)
        fused = traces[case]["fused"]
        sr, polled = start_costs(g, fused)
        if m["mode"] == "static":
            for k in by_polled:
                if (polled == k).sum() >= 5:
                    by_polled[k].append(float(np.median(sr[polled == k])))
        gap = slot_gaps(fused)
        if len(gap):
            gaps.setdefault(m["mode"], []).append(float(np.median(gap)))
        work_in = {launch: traces[case][launch]["end_us"] - traces[case][launch]["ready_us"] for launch in traces[case]}
        inp = {launch: float(np.median(w[traces[case][launch]["op"] == Op.INPUT_TRANSFORM]))
               for launch, w in work_in.items()}
        rows.append((case, m["mode"], summary[case]["fused_untraced_us"], inp["fused"], inp["nonfused"]))
    lines += ["## 1. The megakernel's cost per task, before its work", "",
              "Median over the static cases of each case's median; blocks whose counters were all zero at their start.", "",
              "| counters polled | start to ready | cases |", "|---|---|---|"]
    lines += [f"| {k} | {np.median(v):.2f} | {len(v)} |" for k, v in by_polled.items() if v]
    lines += ["", "| mode | end on an SM to the next start there (median of cases) | cases |", "|---|---|---|"]
    lines += [f"| {mode} | {np.median(v):.3f} | {len(v)} |" for mode, v in gaps.items()]
    lines += ["", "## 2. A GEMM block's work against the GEMM blocks working beside it", "",
              "Work normalised by the case's median at the smallest well-populated count; processor sharing of "
              "the SM's FP32 rate would scale it as the count does.", "",
              "| case | launch | GEMM blocks working on the SM (itself included): median work |", "|---|---|---|"]
    curves = {}
    for case, m in meta.items():
        if m["mode"] != "static":
            continue
        for launch in ("fused", "nonfused"):
            work, n = gemm_corunners(traces[case][launch], rng)
            k = np.round(n).astype(int)
            cells = {int(c): float(np.median(work[k == c])) for c in np.unique(k) if (k == c).sum() >= 20}
            if len(cells) >= 2:
                curves[(case, launch)] = cells
                lines.append(f"| {case} | {launch} | " + ", ".join(f"{c}: {w:.1f}" for c, w in cells.items()) + " |")
    lines += ["", "## 3. Input-transform blocks: work in the megakernel and in their own kernel", "",
              "| case | mode | fused us (untraced) | input block work, fused | non-fused | ratio |", "|---|---|---|---|---|---|"]
    lines += [f"| {c} | {mode} | {t:.1f} | {a:.1f} | {b:.1f} | {a / b:.2f} |" for c, mode, t, a, b in rows]
    fixed, step, eff, errors = gemm_law(meta, traces, CLOCK_MHZ, SM_PEAK)
    worst = sorted(errors.items(), key=lambda kv: -abs(kv[1]))[:4]
    lines += ["", "## 4. The GEMM block law", "",
              f"work = {fixed:.0f} + steps x {step:.1f} + n x issued FLOPs / ({eff:.3f} x {SM_PEAK}) cycles "
              f"(at {CLOCK_MHZ:.0f} MHz), fitted on every (case, launch) alike. Median over them of the median "
              f"relative error: {np.median(np.abs(list(errors.values()))):.1%}; the worst: "
              + ", ".join(f"{c} {launch} {e:+.0%}" for (c, launch), e in worst) + "."]
    (folder / "gemm_law.json").write_text(json.dumps(
        {"block_fixed_cycles": round(fixed, 1), "step_cycles": round(step, 1), "compute_efficiency": round(eff, 4),
         "clock_mhz": CLOCK_MHZ, "median_relative_error": {f"{c}/{launch}": round(e, 4) for (c, launch), e in errors.items()}},
        indent=1))
    o_fixed, o_step, o_eff, chip, o_errors = output_law(meta, traces, CLOCK_MHZ, SM_PEAK)
    o_abs = np.abs(list(o_errors.values()))
    lines += ["", "## 5. The output block law", "",
              f"work = {o_fixed:.0f} + steps x {o_step:.1f} + n x issued FLOPs / ({o_eff:.3f} x {SM_PEAK}) + m x bytes / "
              f"{chip:.0f} cycles, n the blocks of any type working on its SM, m the output blocks working on the chip "
              f"(overlap-weighted, itself included), fitted as section 4's. Median over (case, launch) of the median "
              f"relative error: {np.median(o_abs):.1%}, 90th percentile {np.percentile(o_abs, 90):.1%}."]
    (folder / "output_law.json").write_text(json.dumps(
        {"block_fixed_cycles": round(o_fixed, 1), "step_cycles": round(o_step, 1), "compute_efficiency": round(o_eff, 4),
         "chip_bytes_per_cycle": round(chip, 1), "clock_mhz": CLOCK_MHZ,
         "median_relative_error": {f"{c}/{launch}": round(e, 4) for (c, launch), e in o_errors.items()}}, indent=1))
    lines += body_laws(meta, traces, folder, np.median(np.abs(list(errors.values()))))
    (folder / "analysis.md").write_text("\n".join(lines) + "\n")
    plot(curves, folder / "gemm_corunners.png", folder.name)
    print("\n".join(lines))
    return 0


def body_laws(meta, traces, folder: Path, one_law_error: float) -> list[str]:
    """Section 6: section 4's law fitted on each GEMM body alone (`gemm_body_laws.json`)."""
    laws = gemm_body_laws(meta, traces, CLOCK_MHZ, SM_PEAK)
    lines = ["", "## 6. The GEMM block law per GEMM body", "",
             "Section 4's law fitted on each body's cases alone (`megasim.contract.resources.gemm_body`; "
             f"the one law's median error: {one_law_error:.1%}).", "",
             "| body | cases | fixed cycles | step cycles | efficiency | median error |", "|---|---|---|---|---|---|"]
    lines += [f"| {body} | {len(errs) // 2} | {f:.0f} | {s:.1f} | {e:.3f} | {np.median(np.abs(list(errs.values()))):.1%} |"
              for body, (f, s, e, errs) in laws.items()]
    (folder / "gemm_body_laws.json").write_text(json.dumps(
        {body: {"block_fixed_cycles": round(f, 1), "step_cycles": round(s, 1), "compute_efficiency": round(e, 4),
                "median_relative_error": {f"{c}/{launch}": round(x, 4) for (c, launch), x in errs.items()}}
         for body, (f, s, e, errs) in laws.items()}, indent=1))
    return lines


def plot(curves, path, title):
    """Each case and launch gives points (count / its lowest count, work / work at it): processor sharing of
    the FP32 rate is the diagonal, a block bound by its own latency the floor at 1."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    for launch, colour, marker in (("fused", "tab:blue", "o"), ("nonfused", "tab:orange", "s")):
        xs, ys = [], []
        for (case, l), cells in curves.items():
            if l != launch:
                continue
            c = sorted(cells)
            xs += [x / c[0] for x in c[1:]]
            ys += [cells[x] / cells[c[0]] for x in c[1:]]
        ax.scatter(xs, ys, s=28, alpha=0.6, color=colour, marker=marker,
                   label=f"{launch}: {len(xs)} (case, count) points")
    top = 5.2
    ax.plot([1, top], [1, top], color="black", lw=2, alpha=0.35)
    ax.text(1.12, 2.45, "diagonal: processor sharing of\nthe SM's FP32 rate (work grows\nas the count does)", rotation=0,
            fontsize=9, alpha=0.8)
    ax.axhline(1.0, color="grey", lw=1, ls=":")
    ax.text(3.6, 1.04, "bound by its own latency", fontsize=9, alpha=0.8)
    ax.set_xlim(1, top)
    ax.set_ylim(0.9, 3.2)
    ax.set_xlabel("GEMM blocks working on the SM, relative to the case's lowest count")
    ax.set_ylabel("GEMM block work, relative to its work at that count")
    ax.set_title(f"A GEMM block slows far less than its FP32 share falls ({title} traces)")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
