"""`megasim calibrate`'s measuring half: the raw files the fit reads, written on the GPU at hand.

The hardware sections come from `megasim.gpu.microbench`; the real kernels'
tasks and mapping runs from `megasim.app.calibrate.gpu_runs`, which needs the
scenario catalog, so the orchestration lives here in the application layer
and `gpu/` keeps only device code.

    python -m megasim.app.calibrate.measure --parts hardware,tasks --layers ResNet-2
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

from megasim.app.calibrate import gpu_runs as cr
from megasim.gpu.microbench import make_header, measure_hardware
from megasim.gpu.microbench_stats import gpu_short_name, summary
from megasim.io.writing import write_then_rename


def _write(path: Path, doc: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with write_then_rename(path) as tmp:
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
    return str(path)


PARTS = ("hardware", "tasks", "runs", "trace_sample", "kernel_graph", "builds", "tensor_core", "corpus",
         "corpus_builds")
CORPUS_SUBSET = 32  # generated corpus shapes a calibration measures: 12 of them held out, for its report


def calibrate_measure(gpu_name: str | None, out_dir: str, reps: int = 20, *, parts=PARTS, layers=None,
                      budget_s: float = 400.0, corpus: int = CORPUS_SUBSET, log=print) -> dict:
    """Measure what is not yet in `out_dir` of each part, in order, until `budget_s` (the whole call's) runs out;
    returns {part: "done" | "left"}. Each part writes its raw file whole or resumably (a killed call loses
    at most the case it was measuring), so the same call again continues: <gpu>_micro.json (hardware and the
    task microbenchmarks), <gpu>_runs.json and <gpu>_trace_resnet2.json, <gpu>_trace_sample.npz
    (`trace_sample_runs`), <gpu>_kernel_graph_times.jsonl (`kernel_graph_runs`), <gpu>_builds.json
    (`builds_runs`), <gpu>_tensor_core.json (`tensor_core_runs`), <gpu>_corpus.jsonl (`corpus_runs`, the first `corpus` shapes) and
    <gpu>_corpus_builds.json (every build of those shapes that are held out, which judges the pick)."""
    header = functools.cache(make_header)  # the device is asked only by a part that measures
    gpu_name = gpu_name or gpu_short_name(header()["device"])
    out = Path(out_dir)
    t0 = time.perf_counter()
    left = lambda: budget_s - (time.perf_counter() - t0)  # noqa: E731
    status = {}
    for part in [p for p in PARTS if p in parts and p != "tasks"]:
        if left() <= 0:
            status[part] = "left"
            continue
        measure = _MEASURES[part]
        status[part] = "done" if measure(gpu_name, out, reps, header, "tasks" in parts, layers, left(),
                                         corpus) else "left"
        log(f"[calibrate] {part}: {status[part]} ({time.perf_counter() - t0:.0f} s)")
    return status


def _hardware(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    """<gpu>_micro.json; one written before a hardware section existed gets that section added, so an older raw
    folder resumes instead of re-measuring."""
    from megasim.gpu.microbench import SECTIONS
    path = out / f"{gpu}_micro.json"
    micro = json.loads(path.read_text()) if path.exists() else None
    if micro is not None and (micro.get("tasks") or not tasks):
        missing = [s for s in SECTIONS if s not in micro]
        if missing:
            micro.update(measure_hardware(reps, sections=missing))
            added = {k: header()[k] for k in ("date_utc", "kernel_build")}
            micro["header"].setdefault("sections_added", {}).update({s: added for s in missing})
            _write(path, micro)
        return True
    micro = {"header": header(), **measure_hardware(reps)}
    micro.setdefault("dispatch_summary", {})
    micro["tasks"] = []
    if tasks:
        try:
            micro["tasks"] = cr.measure_tasks(gpu, reps=reps, layers=layers)
        except Exception as exc:  # the hardware sections are still worth writing
            micro["header"]["tasks_error"] = f"{type(exc).__name__}: {exc}"
    _write(path, micro)
    return bool(micro["tasks"]) or not tasks


def _runs(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    path = out / f"{gpu}_runs.json"
    if path.exists() and not json.loads(path.read_text())["header"].get("skipped_layers"):
        return True
    runs, trace = cr.measure_runs(gpu, reps=reps, layers=layers, budget_s=budget_s)
    extra = runs.pop("header_extra")
    _write(path, {"header": {**header(), **extra}, **runs})
    if trace is not None:
        _write(out / f"{gpu}_trace_resnet2.json", {"header": header(), **trace})
    return not extra.get("skipped_layers")


def _trace_sample(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    from megasim.app.calibrate.trace_sample_runs import measure_trace_sample
    return (out / f"{gpu}_trace_sample.npz").exists() or measure_trace_sample(gpu, out, budget_s)["left"] == 0


def _kernel_graph(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    from megasim.app.calibrate.kernel_graph_runs import measure_kernel_graph_times
    return measure_kernel_graph_times(gpu, out, budget_s, corpus=corpus)["left"] == 0


def _builds(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    from megasim.app.calibrate.builds_runs import measure_builds
    return measure_builds(gpu, out / f"{gpu}_builds.json", reps, layers, budget_s)["left"] == 0


def _tensor_core(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    from megasim.app.calibrate.tensor_core_runs import measure_tensor_core
    return measure_tensor_core(gpu, out / f"{gpu}_tensor_core.json", reps, layers, budget_s)["left"] == 0


def _corpus(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    from megasim.app.calibrate.corpus_runs import measure_corpus
    return corpus < 1 or measure_corpus(gpu, out / f"{gpu}_corpus.jsonl", corpus, reps, budget_s)["left"] == 0


def _corpus_builds(gpu, out, reps, header, tasks, layers, budget_s, corpus) -> bool:
    from megasim.app.calibrate.builds_runs import measure_corpus_builds
    return corpus < 1 or measure_corpus_builds(gpu, out / f"{gpu}_corpus_builds.json", reps, corpus,
                                               budget_s)["left"] == 0


_MEASURES = {"hardware": _hardware, "runs": _runs, "trace_sample": _trace_sample, "kernel_graph": _kernel_graph,
             "builds": _builds, "tensor_core": _tensor_core, "corpus": _corpus,
             "corpus_builds": _corpus_builds}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m megasim.app.calibrate.measure", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="scenarios/calibrations/raw", help="folder for the raw JSON files")
    p.add_argument("--gpu", default=None, help="file prefix (default: from the device name, e.g. h200)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--parts", default=",".join(PARTS), help="comma list of " + ", ".join(PARTS))
    p.add_argument("--layers", default=None, help="comma list of layer names (default: all)")
    p.add_argument("--budget-s", type=float, default=400.0, help="wall-clock budget of the call")
    p.add_argument("--corpus", type=int, default=CORPUS_SUBSET, help="generated corpus shapes to measure")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    status = calibrate_measure(a.gpu, a.out, a.reps, parts=tuple(a.parts.split(",")),
                               layers=a.layers.split(",") if a.layers else None, budget_s=a.budget_s, corpus=a.corpus)
    print(json.dumps(status))
    for path in Path(a.out).glob("*_micro.json"):
        print(summary(json.loads(path.read_text())))
    print(f"[measure] total {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
