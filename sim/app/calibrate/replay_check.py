"""The replay target: the simulator given each block's measured SM, against the measured time.

A GPU's per-block trace sample (`<gpu>_trace_sample.npz`, `docs/results/trace_sample/pack.py`) holds, for each
case, the SM every block of one traced megakernel launch ran on; `<gpu>_trace_sample_summary.json` holds each
case's untraced time (median of 20 rotated launches) from the same device call. Every static case is simulated
twice under the profile: with the `replay` dispatch policy on the traced placement (a block waits for its traced
SM, keeping the logical order), and under the default dispatch. Persistent and ready-queue cases are left out:
there a block's SM does not say which tasks it ran. Why the replay runs slow where the default dispatch does
not: the placement stacks GEMMs on some SMs, and any timing error then stalls the dispatch behind them
(docs/decisions.md, "The H200 fits on its own trace sample").
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from megasim.app.calibrate.jobs import progress
from megasim.io.writing import write_then_rename
from megasim.contract.interpreter import RunConfig

TARGET = 0.08
RUN_KEYS = ("layer", "variant", "partition", "strategy", "params", "mode")
DISPATCHES = {"replay": ("replay", {}), "default": (None, None)}


def sample_paths(raw, gpu: str) -> tuple[Path, Path]:
    """The GPU's own trace sample and the untraced times measured with it (a borrowed sample says nothing here)."""
    return Path(raw) / f"{gpu}_trace_sample.npz", Path(raw) / f"{gpu}_trace_sample_summary.json"


def _trace_file(rec: dict, folder: Path) -> Path:
    """One launch of the sample as a measured-trace JSON the replay policy reads (block = ticket order)."""
    rows = [{"block": i, "task": int(t), "op": int(o), "sm": int(s), "dispatch_us": float(a), "start_us": float(a),
             "ready_us": float(r), "end_us": float(e)}
            for i, (t, o, s, a, r, e) in enumerate(zip(rec["task"], rec["op"], rec["sm"], rec["start_us"],
                                                       rec["ready_us"], rec["end_us"]))]
    path = folder / "trace.json"
    path.write_text(json.dumps({"records": rows}))
    return path


def load_replay_inputs(raw, gpu: str) -> tuple | None:
    """(cases, traces, untraced us by case) of the GPU's own trace sample, checked; None where it has none."""
    from megasim.app.calibrate.raw import load_sample_times
    from megasim.app.calibrate.trace_law import load_sample
    sample, times = sample_paths(raw, gpu)
    if not (sample.exists() and times.exists()):
        return None
    return (*load_sample(sample), load_sample_times(times))


def replay_rows(spec, sample_path, times_path, dispatches: dict = DISPATCHES, shown: bool = False,
                only=None, loaded: tuple | None = None) -> list[dict]:
    """Per static case (of `only`, if given): blocks, measured us, and per dispatch (name -> (policy or None for the
    default, options, the trace file added as `trace`)) the prediction, its error and the share of blocks on
    their traced SM. `loaded`: the files as `load_replay_inputs` read them, so they are read once."""
    from megasim.app.calibrate.predict import graph_of, mapping_of
    from megasim.app.calibrate.raw import load_sample_times
    from megasim.app.calibrate.trace_law import load_sample
    from megasim.engine.interpreter import SimpyInterpreter
    meta, traces, measured = loaded or (*load_sample(sample_path), load_sample_times(times_path))
    cases = [c for c, about in meta.items() if about.get("mode", "static") == "static" and c in measured
             and (only is None or c in only)]
    out = []
    with tempfile.TemporaryDirectory() as tmp, progress("replaying traced placements", len(cases), shown) as tick:
        for case in cases:
            run = {k: meta[case][k] for k in RUN_KEYS if k in meta[case]}
            graph, mapping = graph_of(run), mapping_of(run)
            traced = traces[case]["fused"]
            path = _trace_file(traced, Path(tmp))
            row = {"case": case, "blocks": int(graph.num_tasks), "measured_us": measured[case]}
            for name, (policy, opts) in dispatches.items():
                engine = SimpyInterpreter(spec, policy, {**opts, "trace": str(path)}) if policy else SimpyInterpreter(spec)
                run_ = engine.run(graph, mapping, RunConfig())
                sms = run_.records["sm"][np.argsort(run_.records["block"], kind="stable")]
                row.update({f"{name}_us": run_.time_us, f"{name}_error": run_.time_us / measured[case] - 1,
                            f"{name}_on_traced_sm": float((sms == traced["sm"]).mean())})
            out.append(row)
            tick()
    return out


def replay_summary(rows: list[dict], name: str = "replay") -> dict:
    errors = np.array([r[f"{name}_error"] for r in rows])
    return {"cases": len(rows), "within_target": int((np.abs(errors) <= TARGET).sum()),
            "mape": float(np.mean(np.abs(errors))), "median_error": float(np.median(errors)),
            "worst_error": float(errors[np.argmax(np.abs(errors))]),
            "on_traced_sm": float(np.median([r[f"{name}_on_traced_sm"] for r in rows]))}


def replay_section(rows: list[dict]) -> list[str]:
    """The report's section: both dispatches summarised, then the cases."""
    lines = ["## Replaying measured placements (the GPU's own per-block trace sample)", "",
             "Each static megakernel case of the trace sample simulated with every block on the SM it was traced on "
             "(`--policy replay`: a block waits for that SM, keeping the logical order), against the case's untraced "
             f"time. Target: within {TARGET:.0%}.", "",
             f"| dispatch | cases within {TARGET:.0%} | MAPE | median error | worst | blocks on their traced SM |",
             "|---|---|---|---|---|---|"]
    for name, label in (("replay", "replay of the traced placement"), ("default", "default dispatch")):
        s = replay_summary(rows, name)
        lines.append(f"| {label} | {s['within_target']} of {s['cases']} | {s['mape']:.1%} | {s['median_error']:+.1%} | "
                     f"{s['worst_error']:+.1%} | {s['on_traced_sm']:.0%} |")
    lines += ["", "| case | blocks | measured us | replayed us | error | default dispatch us | error |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['blocks']} | {r['measured_us']:.1f} | {r['replay_us']:.1f} | {r['replay_error']:+.1%} "
              f"| {r['default_us']:.1f} | {r['default_error']:+.1%} |" for r in rows]
    return lines + [""]


def validate_replay(spec, gpu: str, raw, out: Path, log, shown: bool = True,
                    loaded: tuple | None = None) -> tuple[list[str], dict | None]:
    """`megasim validate`'s replay section and its summary, and `results/calibration/replay_<gpu>.json` under
    `out`; nothing where the GPU has no trace sample and times of its own. `loaded`: as for `replay_rows`."""
    sample, times = sample_paths(raw, gpu)
    if not (sample.exists() and times.exists()):
        return [], None
    rows = replay_rows(spec, sample, times, shown=shown, loaded=loaded)
    summary = replay_summary(rows)
    with write_then_rename(out / "results" / "calibration" / f"replay_{gpu}.json") as tmp:
        tmp.write_text(json.dumps({"sample": sample.name, "summary": summary, "rows": rows}, indent=1))
    log(f"replayed {len(rows)} traced placements")
    return replay_section(rows), summary


__all__ = ["TARGET", "load_replay_inputs", "replay_rows", "replay_section", "replay_summary", "sample_paths", "validate_replay"]
