"""Each task type's block work and wait, traced against simulated, case by case.

    python docs/results/trace_sample/block_work.py docs/results/trace_sample/h200 [--profile P]

For every static case of the folder's GPU's packed sample, fused and non-fused, the median over a task type's
blocks of its work (ready to end) and of its wait (start to ready: ticket, task read and dependency polls)
in the trace and in the simulator's run of the same problem under the default dispatch. A total can be right
while its parts are not: this is where the parts are checked. Writes `block_work.md` and `block_work.json` in
the folder.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import OP_NAMES, Op
from megasim.engine.interpreter import SimpyInterpreter
from study_io import folder_and_profile, write_report

RAW = Path(__file__).resolve().parents[3] / "scenarios" / "calibrations" / "raw"


def medians(rec) -> dict:
    """{op name: (median work us, median wait us, blocks)} of one launch's records."""
    work, wait = rec["end_us"] - rec["ready_us"], rec["ready_us"] - rec["start_us"]
    return {OP_NAMES[op]: (float(np.median(work[rec["op"] == op])), float(np.median(wait[rec["op"] == op])),
                           int((rec["op"] == op).sum())) for op in Op if (rec["op"] == op).any()}


def rows(profile_path: str, sample: Path) -> list[dict]:
    profile = load_profile(profile_path)
    spec = profile.apply(load_gpu(profile.gpu))
    meta, traces = load_sample(sample)
    out = []
    for case, about in meta.items():
        if about.get("mode", "static") != "static":
            continue
        run = {k: about[k] for k in RUN_KEYS if k in about}
        graph = graph_of(run)
        sims = {"fused": SimpyInterpreter(spec).run(graph, mapping_of(run), RunConfig()).records,
                "nonfused": SimpyInterpreter(spec).run(graph, None, RunConfig(launch="nonfused")).records}
        for launch, sim in sims.items():
            traced, simulated = medians(traces[case][launch]), medians(sim)
            for op, (work, wait, n) in traced.items():
                out.append({"case": case, "launch": launch, "op": op, "blocks": n, "traced_work_us": work,
                            "simulated_work_us": simulated[op][0], "traced_wait_us": wait,
                            "simulated_wait_us": simulated[op][1]})
    return out


def report(out: list[dict], title: str) -> str:
    lines = [f"# Block work and wait, traced against simulated ({title})", "",
             "Median over the static cases of each case's simulated / traced median block work (ready to end) "
             "and the medians of the waits (start to ready), in us.", "",
             "| launch | task type | cases | work, simulated / traced: median (10th-90th percentile) | "
             "wait traced | wait simulated |", "|---|---|---|---|---|---|"]
    for launch in ("fused", "nonfused"):
        for op in (OP_NAMES[o] for o in Op):
            sel = [r for r in out if r["launch"] == launch and r["op"] == op]
            if not sel:
                continue
            ratio = np.array([r["simulated_work_us"] / r["traced_work_us"] for r in sel])
            lines.append(f"| {launch} | {op} | {len(sel)} | {np.median(ratio):.2f} ({np.percentile(ratio, 10):.2f}-"
                         f"{np.percentile(ratio, 90):.2f}) | {np.median([r['traced_wait_us'] for r in sel]):.2f} | "
                         f"{np.median([r['simulated_wait_us'] for r in sel]):.2f} |")
    lines += ["", "| case | launch | task type | blocks | work traced | work simulated | wait traced | wait simulated |",
              "|---|---|---|---|---|---|---|---|"]
    for r in out:
        lines.append(f"| {r['case']} | {r['launch']} | {r['op']} | {r['blocks']} | {r['traced_work_us']:.2f} | "
                     f"{r['simulated_work_us']:.2f} | {r['traced_wait_us']:.2f} | {r['simulated_wait_us']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    args = folder_and_profile(__doc__)
    out = rows(args.profile, RAW / f"{args.folder.name}_trace_sample.npz")
    text = report(out, f"{args.folder.name}, `{args.profile}`")
    write_report(args.folder, "block_work", text, out)
    print("\n".join(text.splitlines()[:14]))


if __name__ == "__main__":
    main()
