"""Time whole builds of the decision space on this GPU: `bench --mapping FILE` and `search --validate-top`.

A build (`megasim.contract.build.Build`: launch, variant, mode, GEMM body, partition) with its mapping is
what the simulator predicts and what a mapping file names, so this is where a prediction meets its
measurement. Every build of one layer is timed on the same rotated inputs against one float64 reference,
by `megasim bench`'s method (CUDA events, warm-up, median of >= 20 calls, inputs rotated past twice the
L2): a fused build as one megakernel launch in its mode, a non-fused build as its four kernels replayed
from a CUDA graph (the faster of its two launch paths, which `bench` reports as nf-graph). A build
counts only where its output has no NaN and its error is within its variant's tolerance.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from megasim.contract.build import Build
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make, validate
from megasim.contract.problem import Layer, WinogradVariant
from megasim.io.writing import write_then_rename


@dataclass(frozen=True)
class Candidate:
    """A build to time, its mapping (a strategy and options, or a mapping file's order) and what the
    simulator predicted for it."""

    build: Build  # its partition written out
    strategy: str = "paper"
    options: tuple = ()  # ((name, value), ...)
    predicted_us: float | None = None
    label: str = ""
    mapping_file: str | None = None

    def mapping(self, graph):
        if self.mapping_file:
            from megasim.contract.mapping.io import load_mapping
            return load_mapping(self.mapping_file, graph)
        mapping = make(graph, self.strategy, **dict(self.options))
        validate(graph, mapping)
        return mapping


def _compile_one(job) -> str | None:
    """Compile one build in a worker process (its error, or None): fills CuPy's disk cache with exactly
    what the timing process then loads."""
    from megasim.gpu.megakernel import fused_module
    layer, b = job
    try:
        fused_module(build_graph(layer, WinogradVariant(b.variant), b.partition), b.mode, gemm=b.gemm,
                     precision=b.precision)
    except MegasimError as exc:
        return str(exc)
    return None


def precompile(jobs: list[tuple[Layer, Build]], workers: int) -> list[str]:
    """Compile each (layer, build)'s kernels in `workers` processes; the refusals. On a fresh machine, timing
    spends most of its time in NVRTC one build at a time; this makes those compiles cache hits. Timings are
    unaffected."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    jobs = list(dict.fromkeys(jobs))
    if workers <= 1 or len(jobs) <= 1:
        return []
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        return [e for e in pool.map(_compile_one, jobs) if e]


@dataclass(frozen=True)
class Prepared:
    """One layer's rotated inputs and its float64 reference, shared by every build and baseline timed on it."""

    inputs: tuple  # ((x, w, y), ...)
    reference: object
    reference_name: str

    @staticmethod
    def of(layer: Layer, seed: int = 0) -> Prepared:
        from megasim.app.bench import _reference
        from megasim.gpu.backend import require_cupy
        from megasim.gpu.timing import rotation_inputs
        cp = require_cupy()
        xs, wts, ys = rotation_inputs(cp, layer, seed + 7)
        return Prepared(tuple(zip(xs, wts, ys)), *_reference(cp, layer, xs[0], wts[0]))

    def baselines(self, layer: Layer, reps: int) -> tuple[list[dict], dict | None]:
        """cuDNN's and torch's algorithms on the first input set (`bench`'s), and the fastest of them."""
        from megasim.app.bench import _baselines, _fastest
        from megasim.gpu.backend import require_cupy
        x, w, _ = self.inputs[0]
        rows = _baselines(require_cupy(), layer, x, w, self.reference, reps)
        return rows, _fastest({"baselines": rows})


def time_builds(layer: Layer, candidates: list[Candidate], reps: int = 20, seed: int = 0, progress=None,
                workers: int = 0, prepared: Prepared | None = None) -> list[dict]:
    """Each candidate timed (see the module docstring) on `prepared` inputs (made here if not given); a build
    the kernels refuse is recorded with its reason, not raised. `workers` > 1 compiles every build first, in
    that many processes."""
    precompile([(layer, c.build) for c in candidates], workers)
    from megasim.app.bench import _rel
    from megasim.app.bench_best import TOLERANCE
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.interpreter import CudaInterpreter
    from megasim.gpu.megakernel import Workspace
    cp = require_cupy()
    reps = max(20, int(reps))
    prepared = prepared or Prepared.of(layer, seed)
    graphs: dict = {}
    out = []
    for i, c in enumerate(candidates):
        b = c.build
        row = {"label": c.label or b.label, **b.to_dict(), "strategy": c.strategy, "options": dict(c.options),
               "predicted_us": c.predicted_us, "reference": prepared.reference_name}
        try:
            key = (b.variant, b.partition)
            graph = graphs[key] = graphs.get(key) or build_graph(layer, WinogradVariant(b.variant), b.partition)
            fused = b.launch == "fused"
            engine = CudaInterpreter(workspace=Workspace(graph), gemm=b.gemm, precision=b.precision,
                                     graph_capture=not fused)
            run = engine.run(graph, c.mapping(graph) if fused else None,
                             RunConfig(launch=b.launch, mode=b.mode, inputs=prepared.inputs, reps=reps))
            err, nans = _rel(cp, run.output, prepared.reference), int(cp.isnan(run.output).sum())
            row.update(measured_us=run.native["median_us"], p10_us=run.native["p10_us"],
                       p90_us=run.native["p90_us"], rel_err=err, nan_count=nans,
                       accurate=nans == 0 and err <= TOLERANCE[b.variant])
            if c.predicted_us and row["measured_us"]:
                row["prediction_error"] = c.predicted_us / row["measured_us"] - 1
            del run, engine
        except MegasimError as exc:
            row.update(measured_us=None, accurate=False, error=str(exc))
        cp.get_default_memory_pool().free_all_blocks()
        out.append(row)
        if progress:
            progress(i + 1, row)
    return out


def fastest(rows: list[dict]) -> dict | None:
    """The fastest accurate measured row."""
    ok = [r for r in rows if r.get("accurate") and r.get("measured_us")]
    return min(ok, key=lambda r: r["measured_us"]) if ok else None


def format_rows(rows: list[dict]) -> str:
    lines = [f"{'build':34} {'predicted us':>12} {'measured us':>11} {'pred err':>8} {'rel err':>8}"]
    for r in rows:
        pred = f"{r['predicted_us']:12.1f}" if r.get("predicted_us") else f"{'-':>12}"
        if r.get("measured_us") is None:
            lines.append(f"{r['label'][:34]:34} {pred} {'refused':>11}  {r.get('error', '')[:60]}")
            continue
        perr = f"{r['prediction_error']:+8.1%}" if "prediction_error" in r else f"{'-':>8}"
        flag = "" if r["accurate"] else "  (inaccurate: not counted)"
        lines.append(f"{r['label'][:34]:34} {pred} {r['measured_us']:11.1f} {perr} {r['rel_err']:8.1e}{flag}")
    return "\n".join(lines)


def bench_mapping_file(args) -> int:
    """`megasim bench --mapping FILE`: exactly the build the file names, on its partition and order, with
    the search's prediction beside the measurement and cuDNN's fastest strict-FP32 algorithm beside both."""
    from megasim.contract.mapping.io import build_of, problem_of, read_mapping_file
    from megasim.gpu.backend import measurement_header
    path = args.mapping
    doc = read_mapping_file(path)
    layer = problem_of(doc, path)[0]
    build = build_of(doc, path)
    predicted = (doc.get("search") or {}).get("predicted_us")
    reps = max(20, int(getattr(args, "reps", None) or 20))
    prepared = Prepared.of(layer)
    rows = time_builds(layer, [Candidate(build, str(doc.get("strategy", "file")), (), predicted,
                                         mapping_file=path)], reps, prepared=prepared)
    base = prepared.baselines(layer, reps)[1]
    doc_out = {"header": {**measurement_header(), "reps": reps}, "layer": layer.name, "mapping_file": str(path),
               "builds": rows, "fastest_baseline": base}
    if getattr(args, "out", None):
        with write_then_rename(args.out) as tmp:
            tmp.write_text(json.dumps(doc_out, indent=1, default=str))
    if getattr(args, "json", False):
        print(json.dumps(doc_out, default=str))
        return 0
    print(f"{layer.name} {layer.shape()}: the build {path} names")
    print(format_rows(rows))
    r = rows[0]
    if base and r.get("measured_us"):
        print(f"fastest baseline: {base['name']} {base['median_us']:.1f} us; this build is "
              f"{base['median_us'] / r['measured_us']:.2f}x of it")
    if r.get("measured_us") is None:
        print(f"the kernels refused this build: {r['error']}", file=sys.stderr)
        return 1
    return 0
