"""`megasim calibrate`'s measuring half: the raw files the fit reads, written on the GPU at hand.

The hardware sections come from `megasim.gpu.microbench`; the real kernels'
tasks and mapping runs from `megasim.app.calibrate.gpu_runs`, which needs the
scenario catalog, so the orchestration lives here in the application layer
and `gpu/` keeps only device code.

    python -m megasim.app.calibrate.measure --parts hardware,tasks --layers ResNet-2
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from megasim.app.calibrate import gpu_runs as cr
from megasim.gpu.microbench import SECTIONS, make_header, measure_hardware
from megasim.gpu.microbench_stats import gpu_short_name, summary


def _write(path: Path, doc: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return str(path)


def calibrate_measure(gpu_name: str | None, out_dir: str, reps: int = 20, *,
                      parts=("hardware", "tasks", "runs", "trace_sample", "kernel_graph", "builds"), layers=None,
                      budget_s: float = 400.0) -> list[str]:
    """Measure and write <gpu>_micro.json, <gpu>_runs.json, <gpu>_trace_resnet2.json, and, resumable,
    <gpu>_trace_sample.npz (`trace_sample_runs`), <gpu>_kernel_graph_times.jsonl (`kernel_graph_runs`) and
    <gpu>_builds.json (`builds_runs`); returns the paths."""
    header = make_header()
    gpu_name = gpu_name or gpu_short_name(header["device"])
    out = Path(out_dir)
    paths = []
    if "hardware" in parts or "tasks" in parts:
        micro = {"header": header}
        micro.update(measure_hardware(reps) if "hardware" in parts
                     else {s: [] if s == "dispatch" else {} for s in SECTIONS})
        micro.setdefault("dispatch_summary", {})
        micro["tasks"] = []
        if "tasks" in parts:
            try:
                micro["tasks"] = cr.measure_tasks(gpu_name, reps=reps, layers=layers)
            except Exception as exc:  # the hardware sections are still worth writing
                micro["header"]["tasks_error"] = f"{type(exc).__name__}: {exc}"
        paths.append(_write(out / f"{gpu_name}_micro.json", micro))
    if "runs" in parts:
        runs, trace = cr.measure_runs(gpu_name, reps=reps, layers=layers, budget_s=budget_s)
        paths.append(_write(out / f"{gpu_name}_runs.json", {"header": {**header, **runs.pop("header_extra")},
                                                            **runs}))
        if trace is not None:
            paths.append(_write(out / f"{gpu_name}_trace_resnet2.json", {"header": header, **trace}))
    if "trace_sample" in parts:
        from megasim.app.calibrate.trace_sample_runs import measure_trace_sample
        measure_trace_sample(gpu_name, out, budget_s)
        paths.append(str(out / f"{gpu_name}_trace_sample.npz"))
    if "kernel_graph" in parts:
        from megasim.app.calibrate.kernel_graph_runs import measure_kernel_graph_times
        measure_kernel_graph_times(gpu_name, out, budget_s)
        paths.append(str(out / f"{gpu_name}_kernel_graph_times.jsonl"))
    if "builds" in parts:
        from megasim.app.calibrate.builds_runs import measure_builds
        builds = out / f"{gpu_name}_builds.json"
        measure_builds(gpu_name, builds, reps, layers, budget_s)
        paths.append(str(builds))
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m megasim.app.calibrate.measure", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="scenarios/calibrations/raw", help="folder for the raw JSON files")
    p.add_argument("--gpu", default=None, help="file prefix (default: from the device name, e.g. h200)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--parts", default="hardware,tasks,runs,trace_sample,kernel_graph,builds",
                   help="comma list of hardware, tasks, runs, trace_sample, kernel_graph, builds")
    p.add_argument("--layers", default=None, help="comma list of layer names (default: all)")
    p.add_argument("--budget-s", type=float, default=400.0, help="wall-clock budget of the runs part")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    paths = calibrate_measure(a.gpu, a.out, a.reps, parts=tuple(a.parts.split(",")),
                              layers=a.layers.split(",") if a.layers else None, budget_s=a.budget_s)
    for path in paths:
        print(path)
        if path.endswith("_micro.json"):
            with open(path) as f:
                print(summary(json.load(f)))
    print(f"[measure] total {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
