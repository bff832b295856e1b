"""The rest of a layer's decision space beside the requested build, and the best fused and non-fused builds.

`megasim bench` times the requested variant with the generic GEMM body in full (fused in every scheduling mode,
non-fused alone and graph-captured, baselines). A user who wants the fastest convolution does not care which
build gives it, as long as it is accurate enough, so every other build of the layer's decision space
(`contract.build.discrete_builds`: each variant, mode and GEMM body, fused or non-fused, a warp build on its
own widened partition, each warp build in FP32 and, where the contract allows it, in 3xTF32) is timed beside
it on the same inputs: bench measures the builds the simulator ranks, from the one declaration, and their
tensor-core twins. A non-fused build is its four kernels replayed from a CUDA graph.

The best is the fastest run that is accurate (`refusal`). An FP32 run is accurate where its output has no NaN
and its relative error against float64 is within its variant's tolerance; F(6x6) rounds more than F(4x4)
(larger transform constants), so it has its own, the one the GPU tests use. A 3xTF32 run replaces FFMA by
tensor-core products, so it must also earn the name FP32: its error within `FP32_BOUND` and at most
`TWIN_RATIO` times the error of its FP32 twin (the same build, timed in the same call). `TOLERANCE[6]` is
looser than F(6)'s FP32 bound, hence the separate table.
"""
from __future__ import annotations

from dataclasses import replace

from megasim.contract.build import Build, build_partition, discrete_builds
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import WinogradVariant
from megasim.contract.resources import PRECISIONS
from megasim.contract.scheduling import MODES

TOLERANCE = {2: 5e-6, 4: 5e-6, 6: 1e-4}  # an FP32 run's relative error, per variant
FP32_BOUND = {2: 5e-6, 4: 5e-6, 6: 1e-5}  # what a non-FP32 run may err and still count as FP32
TWIN_RATIO = 2.0  # ... and at most this many times its FP32 twin's error


def timing_key(mode: str, variant: int, main_variant: int, gemm: str = "generic") -> str:
    """'fused', 'fused-persistent' for the requested variant; '-f<m>' appended for the others; '-warp'
    after 'fused' for the warp-tiled GEMM body."""
    key = "fused" + ("-warp" if gemm == "warp" else "") + ("" if mode == "static" else f"-{mode}")
    return key if variant == main_variant else f"{key}-f{variant}"


def build_key(build: Build, main_variant: int) -> str:
    """A build's timing key: `timing_key` for a fused one; 'nonfused-graph', 'nonfused-warp-graph-f6' for a
    non-fused one (its graph-captured launch); '+3xtf32' appended for a precision other than FP32, so an FP32
    build keeps the key it always had and its twin's key is its own plus the suffix."""
    if build.launch == "fused":
        key = timing_key(build.mode, build.variant, main_variant, build.gemm)
    else:
        key = "nonfused" + ("-warp" if build.gemm == "warp" else "") + "-graph"
        key = key if build.variant == main_variant else f"{key}-f{build.variant}"
    return key if build.precision == "fp32" else f"{key}+{build.precision}"


def split_precision(key: str) -> tuple[str, str] | None:
    """(the FP32 twin's key, the precision) of a timing key; None for a suffix that names no other precision."""
    base, plus, precision = key.partition("+")
    if not plus:
        return key, "fp32"
    return (base, precision) if precision in PRECISIONS and precision != "fp32" else None


def parse_build_key(key: str, main_variant: int) -> tuple[str, int, str, str, str] | None:
    """(launch, variant, mode, GEMM body, precision) of a build's timing key (`build_key`'s inverse), or None for
    a key that names no build (the raw-blockIdx run, a non-fused launch timed kernel by kernel)."""
    split = split_precision(key)
    if split is None:
        return None
    key, precision = split
    if key.startswith("nonfused"):
        parts = key.split("-")
        if "graph" not in parts:
            return None
        variant = int(parts[-1][1:]) if parts[-1].startswith("f") else main_variant
        return "nonfused", variant, "static", "warp" if "warp" in parts else "generic", precision
    fused = parse_timing_key(key, main_variant) if key.startswith("fused") else None
    return None if fused is None else ("fused", fused[1], fused[0], fused[2], precision)


def swept_precisions(flag: str | None) -> tuple[str, ...]:
    """The precisions `bench --precision` sweeps and picks from: one, or every one ('all', the default)."""
    return PRECISIONS if flag in (None, "all") else (flag,)


def bench_builds(layer, own, precisions: tuple[str, ...]) -> list[Build]:
    """The space's builds at `precisions`, plus the FP32 twin of each other-precision build: the accuracy rule
    measures a 3xTF32 run against its twin, so the twin is timed in the same call."""
    every = discrete_builds(layer, own, PRECISIONS)
    twins = {replace(b, precision="fp32") for b in every if b.precision in precisions and b.precision != "fp32"}
    return [b for b in every if b.precision in precisions or b in twins]


def space_runs(graph, mapping_for, config: RunConfig, interpreter_for, score, done=(),
               precisions: tuple[str, ...] = PRECISIONS) -> tuple[dict, dict, dict]:
    """(timings, checks, partitions) of every build of the layer's decision space at `precisions`
    (`bench_builds`) whose key is not in `done`, on `graph`'s partition as the layer's own and the inputs of
    `config`.

    `mapping_for(graph)` builds the mapping the user asked for on another build's graph,
    `interpreter_for(graph, **build_options)` a CUDA interpreter with its workspace, `score(y)` the output's
    check. A build the kernels cannot build is recorded with its error, not raised.
    """
    timings, checks, parts = {}, {}, {}
    layer, main = graph.layer, graph.variant.m
    for b in bench_builds(layer, graph.partition, precisions):
        key = build_key(b, main)
        if key in done:
            continue
        try:
            part = build_partition(layer, b, graph.partition)
            g = build_graph(layer, WinogradVariant(b.variant), part)
            fused = b.launch == "fused"
            cuda = interpreter_for(g, gemm=b.gemm, precision=b.precision, graph_capture=not fused)
            run = cuda.run(g, mapping_for(g) if fused else None,
                           RunConfig(inputs=config.inputs, reps=config.reps, launch=b.launch, mode=b.mode))
            timings[key], checks[key] = run.native, score(run.output)
            parts[key] = part.to_dict()
        except MegasimError as exc:
            timings[key] = {"median_us": None, "error": str(exc)}
    return timings, checks, parts


def parse_timing_key(key: str, main_variant: int) -> tuple[str, int, str] | None:
    """(mode, variant, GEMM body) of a fused timing key (`timing_key`'s inverse), or None where it is no mode's."""
    parts = key.split("-")[1:]
    variant = int(parts.pop()[1:]) if parts and parts[-1].startswith("f") and parts[-1][1:].isdigit() else main_variant
    gemm = "warp" if parts[:1] == ["warp"] else "generic"
    parts = parts[1:] if gemm == "warp" else parts
    mode = parts[0] if parts else "static"
    return (mode, variant, gemm) if mode in MODES else None


def refusal(variant: int, precision: str, check: dict | None, fp32_check: dict | None = None) -> str | None:
    """Why a run does not count as accurate, or None where it does (the module docstring's rule): no NaN and
    within its variant's tolerance; a run at another precision also within `FP32_BOUND` and `TWIN_RATIO` times
    its FP32 twin's error, `fp32_check`."""
    if not check:
        return "no accuracy check"
    if check["nan_count"]:
        return f"{check['nan_count']} NaN in its output"
    err, fp32 = check["rel_err"], precision == "fp32"
    bound, name = (TOLERANCE[variant], "tolerance") if fp32 else (FP32_BOUND[variant], "FP32 bound")
    if not err <= bound:
        return f"rel_err {err:.2e} over F({variant})'s {name} {bound:.0e}"
    if fp32:
        return None
    if not fp32_check or fp32_check["nan_count"] or fp32_check.get("rel_err") is None:
        return "its FP32 twin has no clean measurement in this bench call"
    if not err <= TWIN_RATIO * fp32_check["rel_err"]:
        return f"rel_err {err:.2e} over {TWIN_RATIO:g}x its FP32 twin's {fp32_check['rel_err']:.2e}"
    return None


def run_refusal(entry: dict, key: str) -> str | None:
    """`refusal` of one timing key of a bench entry, its FP32 twin looked up in the same entry."""
    parsed = parse_build_key(key, entry["variant"])
    if parsed is None:
        return "names no build"
    twin = split_precision(key)[0]
    return refusal(parsed[1], parsed[4], entry["checks"].get(key), entry["checks"].get(twin))


def fp32_accuracy(entry: dict) -> dict:
    """Per run at a precision other than FP32: whether it counts as FP32-accurate, and why not."""
    out = {}
    for key in entry["timings"]:
        parsed = parse_build_key(key, entry["variant"])
        if parsed is not None and parsed[4] != "fp32" and key in entry["checks"]:
            why = run_refusal(entry, key)
            out[key] = {"accepted": why is None, "why": why}
    return out


def accurate_runs(entry: dict, launch: str):
    """(key, parsed key, median us, check) of each accurate run of `launch` at a precision the entry swept."""
    precisions = entry.get("precisions") or PRECISIONS
    for key, timing in entry["timings"].items():
        parsed = parse_build_key(key, entry["variant"])
        if parsed is None or parsed[0] != launch or parsed[4] not in precisions:
            continue
        if timing and timing.get("median_us") is not None and run_refusal(entry, key) is None:
            yield key, parsed, timing["median_us"], entry["checks"][key]


def fastest_accurate(entry: dict, launch: str):
    """(key, parsed key, median us, check) of the fastest accurate run of `launch`, or None."""
    return min(accurate_runs(entry, launch), key=lambda r: r[2], default=None)


def best_nonfused(entry: dict) -> dict | None:
    """The fastest accurate non-fused (graph-captured) build of a bench entry: variant, body, precision, time,
    error."""
    best = fastest_accurate(entry, "nonfused")
    if best is None:
        return None
    key, (_, variant, _, gemm, precision), us, check = best
    return {"variant": variant, "gemm": gemm, "precision": precision, "timing": key, "median_us": us,
            "rel_err": check["rel_err"]}


def best_fused(entry: dict) -> dict | None:
    """The fastest accurate fused run of a bench entry: mode, variant, body, precision, mapping, partition, time,
    error."""
    best = fastest_accurate(entry, "fused")
    if best is None:
        return None
    key, (_, variant, mode, gemm, precision), us, check = best
    return {"mode": mode, "variant": variant, "gemm": gemm, "precision": precision, "timing": key,
            "median_us": us, "rel_err": check["rel_err"], "mapping": entry["mapping"],
            "partition": entry.get("gemm_partitions", {}).get(key, entry["partition"])}
