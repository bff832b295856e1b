"""The rest of a layer's decision space beside the requested build, and the best fused and non-fused builds.

`megasim bench` times the requested variant with the generic GEMM body in full (fused in every scheduling mode,
non-fused alone and graph-captured, baselines). A user who wants the fastest convolution does not care which
build gives it, as long as it is accurate enough, so every other build of the layer's decision space
(`contract.build.discrete_builds`: each variant, mode and GEMM body, fused or non-fused, a warp build on its
own widened partition) is timed beside it on the same inputs: bench measures exactly the builds the simulator
ranks, from the one declaration. A non-fused build is its four kernels replayed from a CUDA graph. The best is
the fastest run whose output has no NaN and whose relative error against float64 is within its variant's
tolerance. F(6x6) rounds more than F(4x4) (larger transform constants), so it has its own tolerance, the one
the GPU tests use.
"""
from __future__ import annotations

from megasim.contract.build import Build, build_partition, discrete_builds
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import WinogradVariant
from megasim.contract.scheduling import MODES

TOLERANCE = {2: 5e-6, 4: 5e-6, 6: 1e-4}


def timing_key(mode: str, variant: int, main_variant: int, gemm: str = "generic") -> str:
    """'fused', 'fused-persistent' for the requested variant; '-f<m>' appended for the others; '-warp'
    after 'fused' for the warp-tiled GEMM body."""
    key = "fused" + ("-warp" if gemm == "warp" else "") + ("" if mode == "static" else f"-{mode}")
    return key if variant == main_variant else f"{key}-f{variant}"


def build_key(build: Build, main_variant: int) -> str:
    """A build's timing key: `timing_key` for a fused one; 'nonfused-graph', 'nonfused-warp-graph-f6' for a
    non-fused one (its graph-captured launch)."""
    if build.launch == "fused":
        return timing_key(build.mode, build.variant, main_variant, build.gemm)
    key = "nonfused" + ("-warp" if build.gemm == "warp" else "") + "-graph"
    return key if build.variant == main_variant else f"{key}-f{build.variant}"


def parse_build_key(key: str, main_variant: int) -> tuple[str, int, str, str] | None:
    """(launch, variant, mode, GEMM body) of a build's timing key (`build_key`'s inverse), or None for a key
    that names no build (the raw-blockIdx run, a non-fused launch timed kernel by kernel)."""
    if key.startswith("nonfused"):
        parts = key.split("-")
        if "graph" not in parts:
            return None
        variant = int(parts[-1][1:]) if parts[-1].startswith("f") else main_variant
        return "nonfused", variant, "static", "warp" if "warp" in parts else "generic"
    fused = parse_timing_key(key, main_variant) if key.startswith("fused") else None
    return None if fused is None else ("fused", fused[1], fused[0], fused[2])


def space_runs(graph, mapping_for, config: RunConfig, interpreter_for, score, done=()) -> tuple[dict, dict, dict]:
    """(timings, checks, partitions) of every build of the layer's decision space whose key is not in `done`,
    on `graph`'s partition as the layer's own and the inputs of `config`.

    `mapping_for(graph)` builds the mapping the user asked for on another build's graph,
    `interpreter_for(graph, **build_options)` a CUDA interpreter with its workspace, `score(y)` the output's
    check. A build the kernels cannot build is recorded with its error, not raised.
    """
    timings, checks, parts = {}, {}, {}
    layer, main = graph.layer, graph.variant.m
    for b in discrete_builds(layer, graph.partition):
        key = build_key(b, main)
        if key in done:
            continue
        try:
            part = build_partition(layer, b, graph.partition)
            g = build_graph(layer, WinogradVariant(b.variant), part)
            fused = b.launch == "fused"
            cuda = interpreter_for(g, gemm=b.gemm, graph_capture=not fused)
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


def best_nonfused(entry: dict) -> dict | None:
    """The fastest accurate non-fused (graph-captured) build of a bench entry: variant, body, time, error."""
    best = None
    for key, timing in entry["timings"].items():
        parsed = parse_build_key(key, entry["variant"])
        check = entry["checks"].get(key)
        if parsed is None or parsed[0] != "nonfused" or check is None or not timing or timing.get("median_us") is None:
            continue
        if check["nan_count"] or not check["rel_err"] <= TOLERANCE[parsed[1]]:
            continue
        if best is None or timing["median_us"] < best["median_us"]:
            best = {"variant": parsed[1], "gemm": parsed[3], "timing": key, "median_us": timing["median_us"],
                    "rel_err": check["rel_err"]}
    return best


def best_fused(entry: dict) -> dict | None:
    """The fastest accurate fused run of a bench entry: mode, variant, mapping, partition, time, error."""
    best = None
    for key, timing in entry["timings"].items():
        parsed = parse_timing_key(key, entry["variant"]) if key.startswith("fused") else None
        check = entry["checks"].get(key)
        if parsed is None or check is None or not timing or timing.get("median_us") is None:
            continue
        mode, variant, gemm = parsed
        if check["nan_count"] or not check["rel_err"] <= TOLERANCE[variant]:
            continue
        if best is None or timing["median_us"] < best["median_us"]:
            best = {"mode": mode, "variant": variant, "gemm": gemm, "timing": key, "median_us": timing["median_us"],
                    "rel_err": check["rel_err"], "mapping": entry["mapping"],
                    "partition": entry.get("gemm_partitions", {}).get(key, entry["partition"])}
    return best
