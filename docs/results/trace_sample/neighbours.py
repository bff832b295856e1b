"""Input-transform blocks beside working GEMMs: the trace sample against the simulator, block by block.

    python docs/results/trace_sample/neighbours.py docs/results/trace_sample/h100 PROFILE [STRETCH ...]

For every fused static case of the sample whose input blocks run both beside no working GEMM and beside
some, each input block's work (ready to end) is set against the overlap-weighted number of GEMM blocks that
worked on its SM meanwhile, in the trace and in the simulator's run of the same problem under PROFILE, once
as the profile has it and once per STRETCH, a `gemm_neighbour_stretch` factor for the input transform.
Writes `neighbours.md` and `neighbours.png` beside the sample. What it shows is in
docs/decisions.md, "A GEMM weighs 2 in an SM's issue": an input beside a working GEMM takes 1.2-1.6x what it takes beside
none, where the model, sharing only FP32 issue, makes it no slower.
"""
import json
import sys
from pathlib import Path

import matplotlib
import numpy as np

from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import load_sample, overlap
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.engine.interpreter import SimpyInterpreter

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALONE, BESIDE = 0.25, 0.75  # overlap-weighted GEMMs: "beside none" below the first, "beside some" above the second


RAW = Path(__file__).resolve().parents[3] / "scenarios" / "calibrations" / "raw"  # the packed samples


def beside_gemms(rec) -> tuple[np.ndarray, np.ndarray]:
    """(work us, overlap-weighted working GEMM blocks on its SM) of every input-transform block of a launch."""
    op, sm, rd, en = rec["op"], rec["sm"], rec["ready_us"], rec["end_us"]
    work, near = [], []
    for s in np.unique(sm[op == Op.INPUT_TRANSFORM]):
        gemms = np.where((sm == s) & (op == Op.GEMM))[0]
        for j in np.where((sm == s) & (op == Op.INPUT_TRANSFORM))[0]:
            a, b = rd[j], en[j]
            if b > a:
                work.append(b - a)
                near.append(overlap(a, b, rd[gemms], en[gemms]))
    return np.array(work), np.array(near)


def medians(work, near) -> tuple[float, float]:
    alone, beside = work[near < ALONE], work[near >= BESIDE]
    return (float(np.median(alone)) if len(alone) >= 5 else float("nan"),
            float(np.median(beside)) if len(beside) >= 5 else float("nan"))


def simulated(problem: dict, spec) -> dict:
    run = {k: problem[k] for k in ("layer", "variant", "partition", "strategy", "params", "mode")}
    rec = SimpyInterpreter(spec).run(graph_of(run), mapping_of(run), RunConfig(mode=run["mode"])).records
    return {"op": rec["op"], "sm": rec["sm"], "ready_us": rec["ready_us"], "end_us": rec["end_us"]}


def main(folder: Path, profile: str, stretches: list[float]) -> None:
    meta, traces = load_sample(RAW / f"{folder.name}_trace_sample.npz")
    base = load_profile(profile).apply(load_gpu(load_profile(profile).gpu))
    specs = {"model": base, **{f"stretch {s}": base.with_model(gemm_neighbour_stretch={"stretch": {"input_transform": s}})
                               for s in stretches}}
    rows = []
    for case, problem in meta.items():
        if problem["mode"] != "static":
            continue
        measured = medians(*beside_gemms(traces[case]["fused"]))
        if np.isnan(measured).any():
            continue
        rows.append((case, measured, {k: medians(*beside_gemms(simulated(problem, s))) for k, s in specs.items()}))
        print(case, flush=True)
    lines = ["# Input-transform blocks beside working GEMMs: trace against simulator", "",
             f"Profile `{profile}`; fused static cases whose inputs run both beside no working GEMM (overlap-weighted "
             f"count < {ALONE}) and beside some (>= {BESIDE}). Median input-block work, us; the ratio column is beside / "
             "alone.", "",
             "| case | measured alone | beside | ratio | " + " | ".join(f"{k}: alone | beside | ratio" for k in specs) + " |",
             "|---|---|---|---|" + "---|---|---|" * len(specs)]
    for case, (ma, mb), sims in rows:
        cells = " | ".join(f"{a:.1f} | {b:.1f} | {b / a:.2f}" for a, b in sims.values())
        lines.append(f"| {case} | {ma:.1f} | {mb:.1f} | {mb / ma:.2f} | {cells} |")
    ratio = {k: [sims[k][1] / mb for _, (_, mb), sims in rows] for k in specs}
    lines += ["", "Simulated / measured work beside GEMMs, median over the cases: " +
              ", ".join(f"{k} {np.median(v):.2f}" for k, v in ratio.items()) + "."]
    (folder / "neighbours.md").write_text("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(9, 4.8))
    x = np.arange(len(rows))
    ax.axhline(1.0, color="0.6", lw=1)
    ax.plot(x, [mb / ma for _, (ma, mb), _ in rows], "ko", ms=8, label=f"measured ({folder.name.upper()} trace)")
    for (k, _), marker in zip(specs.items(), "s^vD"):
        ax.plot(x, [sims[k][1] / sims[k][0] for _, _, sims in rows], marker, ms=6, alpha=0.8, label=f"simulated, {k}")
    ax.set_xticks(x, [c for c, _, _ in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("input block work: beside working GEMMs / beside none")
    ax.set_title(f"{folder.name.upper()}: an input transform's work beside working GEMMs, traced and simulated")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "neighbours.png", dpi=130)
    print(json.dumps({k: round(float(np.median(v)), 3) for k, v in ratio.items()}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], [float(s) for s in sys.argv[3:]])
