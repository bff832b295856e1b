"""The other Winograd variants' and GEMM bodies' fused runs, and the best fused configuration of a layer.

`megasim bench` times the requested variant in full (fused in every scheduling mode, non-fused,
baselines). A user who wants the fastest fused convolution does not care which F(m x m, 3 x 3) gives
it, as long as it is accurate enough, so the other variants run fused too, in every mode. The best
is the fastest run whose output has no NaN and whose relative error against float64 is within its
variant's tolerance. F(6x6) rounds more than F(4x4) (larger transform constants), so it has its own
tolerance, the one the GPU tests use. The warp-tiled GEMM body (gpu/kernels/gemm_warp.cuh) is timed
beside the generic one, on its own partition; the calibrated profiles describe the generic body.
"""
from __future__ import annotations

from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import VARIANTS, WinogradVariant
from megasim.contract.resources import gemm_warp_tiled, warp_partition
from megasim.contract.scheduling import MODES

TOLERANCE = {2: 5e-6, 4: 5e-6, 6: 1e-4}
WARP_MODES = ("static", "persistent")  # the ready queue never beat persistent (docs/performance.md)


def timing_key(mode: str, variant: int, main_variant: int, gemm: str = "generic") -> str:
    """'fused', 'fused-persistent' for the requested variant; '-f<m>' appended for the others; '-warp'
    after 'fused' for the warp-tiled GEMM body."""
    key = "fused" + ("-warp" if gemm == "warp" else "") + ("" if mode == "static" else f"-{mode}")
    return key if variant == main_variant else f"{key}-f{variant}"


def _timed_variant(layer, part, m: int, main: int, modes, gemm: str, mapping_for, cuda_for, config: RunConfig,
                   score, timings: dict, checks: dict):
    """Variant m's graph on `part`, fused in each of `modes`, into `timings`/`checks`; returns the graph."""
    g = build_graph(layer, WinogradVariant(m), part)
    mapping, cuda = mapping_for(g), cuda_for(g)
    for mode in modes:
        run = cuda.run(g, mapping, RunConfig(inputs=config.inputs, reps=config.reps, mode=mode))
        key = timing_key(mode, m, main, gemm)
        timings[key], checks[key] = run.native, score(run.output)
    return g


def other_variant_runs(graph, mapping_for, config: RunConfig, interpreter_for, score) -> tuple[dict, dict]:
    """(timings, checks) of every mode of every variant but `graph`'s, on the same inputs and partition.

    `mapping_for(graph)` builds the mapping the user asked for on another variant's graph,
    `interpreter_for(graph)` a CUDA interpreter with its workspace, `score(y)` the output's check.
    A variant the kernels cannot build is recorded with its error, not raised.
    """
    timings, checks = {}, {}
    main = graph.variant.m
    for m in VARIANTS:
        if m == main:
            continue
        try:
            _timed_variant(graph.layer, graph.partition, m, main, MODES, "generic", mapping_for, interpreter_for,
                           config, score, timings, checks)
        except MegasimError as exc:
            timings[timing_key("static", m, main)] = {"median_us": None, "error": str(exc)}
    return timings, checks


def warp_runs(graph, mapping_for, config: RunConfig, interpreter_for, score) -> tuple[dict, dict, dict]:
    """(timings, checks, partitions) of the warp-tiled GEMM body: every variant fused in WARP_MODES and the
    requested variant non-fused (graph-captured), each on `warp_partition` of the layer's partition.

    `interpreter_for(graph, **options)` builds a CUDA interpreter of the warp body. Where the warp body does
    not apply (`gemm_warp_tiled`), each variant is recorded with the reason, not raised.
    """
    timings, checks = {}, {}
    main, layer = graph.variant.m, graph.layer
    part = warp_partition(layer, graph.partition)
    applies = gemm_warp_tiled(layer, part)
    for m in VARIANTS:
        key0 = timing_key("static", m, main, "warp")
        if not applies:
            timings[key0] = {"median_us": None, "error": f"the warp-tiled GEMM does not apply to {part}"}
            continue
        try:
            g = _timed_variant(layer, part, m, main, WARP_MODES, "warp", mapping_for, interpreter_for, config, score,
                               timings, checks)
            if m == main:
                run = interpreter_for(g, graph_capture=True).run(
                    g, None, RunConfig(launch="nonfused", inputs=config.inputs, reps=config.reps))
                timings["nonfused-warp-graph"], checks["nonfused-warp-graph"] = run.native, score(run.output)
        except MegasimError as exc:
            timings[key0] = {"median_us": None, "error": str(exc)}
    return timings, checks, {key: part.to_dict() for key in checks}


def parse_timing_key(key: str, main_variant: int) -> tuple[str, int, str] | None:
    """(mode, variant, GEMM body) of a fused timing key (`timing_key`'s inverse), or None where it is no mode's."""
    parts = key.split("-")[1:]
    variant = int(parts.pop()[1:]) if parts and parts[-1].startswith("f") and parts[-1][1:].isdigit() else main_variant
    gemm = "warp" if parts[:1] == ["warp"] else "generic"
    parts = parts[1:] if gemm == "warp" else parts
    mode = parts[0] if parts else "static"
    return (mode, variant, gemm) if mode in MODES else None


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
