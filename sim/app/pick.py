"""`megasim simulate --all-builds`: every build of a layer's decision space, predicted and ranked.

What the simulator exists to answer, asked whole: of the ways to run this layer (`megasim.contract.build`:
fused in each mode or non-fused, each Winograd variant, each GEMM body its partition tiles, each precision the
model predicts), which is fastest on this GPU? Each build runs on the layer's partition (a warp build's widened as `bench` runs it) under the
mapping the flags give; the ranking is the model's, and `validate` reports how far its pick lands from the
fastest measured build on the paper layers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from megasim.app.choices import mapping_from_args, options_from_args
from megasim.contract.build import Build, build_partition, discrete_builds
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import WinogradVariant
from megasim.engine.blocks import predicted_precisions, require_precision
from megasim.engine.interpreter import SimpyInterpreter

SINGLE_BUILD_FLAGS = ("gemm", "mode", "variant", "mapping", "trace", "plot", "network")


@dataclass(frozen=True)
class Ranked:
    build: Build
    time_us: float

    def to_json(self) -> dict:
        return {**self.build.to_dict(), "label": self.build.label, "time_us": self.time_us}


def rank_builds(layer, own, gpu, mapping_for, policy: str, options: dict | None = None,
                precisions: tuple[str, ...] = ("fp32",)) -> list[Ranked]:
    """Every build of `layer` at its own partition `own` and `precisions`, fastest predicted first;
    `mapping_for(graph)` builds the mapping of each build's graph. FP32 alone unless asked: megasim.torch ranks
    with this and never runs a 3xTF32 build."""
    out = []
    for build in discrete_builds(layer, own, precisions):
        part = build_partition(layer, build, own)
        graph = build_graph(layer, WinogradVariant(build.variant), part)
        engine = SimpyInterpreter(gpu, policy, options, build.gemm, precision=build.precision)
        fused = build.launch == "fused"
        run = engine.run(graph, mapping_for(graph) if fused else None, RunConfig(launch=build.launch, mode=build.mode))
        out.append(Ranked(replace(build, partition=part), run.time_us))
    return sorted(out, key=lambda r: r.time_us)


def ranked_precisions(pinned: str | None, gpu) -> tuple[str, ...]:
    """The precisions `--all-builds` ranks: the one pinned, else every one the model predicts (3xTF32 too where it
    has a `gemm_precision` law, as the calibrated H200 profile does)."""
    if pinned:
        require_precision(gpu.model, pinned)
        return (pinned,)
    return predicted_precisions(gpu.model)


def check_single_build_flags(given) -> None:
    """--all-builds sweeps the axes these flags would pin, or writes what one build would: refuse them."""
    clash = [f"--{f.replace('_', '-')}" for f in SINGLE_BUILD_FLAGS if f in given]
    if clash:
        raise MegasimError(f"--all-builds ranks every build of the layer; drop {', '.join(clash)} (or --all-builds)")


def format_ranking(layer, ranked: list[Ranked]) -> str:
    best = ranked[0].time_us
    lines = [f"{layer.name} {layer.shape()}: {len(ranked)} builds, fastest predicted first", "",
             f"{'build':34s} {'time (us)':>10s} {'vs best':>8s}  partition (gemm_k_per_task, threads)"]
    for r in ranked:
        p = r.build.partition
        lines.append(f"{r.build.label:34s} {r.time_us:10.1f} {r.time_us / best - 1:+8.1%}  "
                     f"{p.gemm_k_per_task}, {p.threads}")
    return "\n".join(lines)


def simulate_all_builds(args, gpu, model_note: str, problem) -> int:
    """`simulate --all-builds`: `problem(args, gpu_name)` gives the layer and its partition, as for one build."""
    check_single_build_flags(getattr(args, "given", ()))
    layer, _, partition, partition_source, _ = problem(args, gpu.name)
    precisions = ranked_precisions(getattr(args, "precision", None), gpu)
    ranked = rank_builds(layer, partition, gpu, lambda g: mapping_from_args(g, args), args.policy,
                         options_from_args(args)[1], precisions)
    if not ranked:
        raise MegasimError(f"{layer.name} has no {'/'.join(precisions)} build at its partition: 3xTF32 runs on the "
                           "warp GEMM body's tiling, which this layer's partition does not fit")
    if args.json:
        print(json.dumps({"layer": layer.name, "gpu": gpu.name, "partition_source": partition_source,
                          "builds": [r.to_json() for r in ranked], "model": model_note}))
    else:
        print(format_ranking(layer, ranked))
        print(f"partition from: {partition_source} (a warp build's widened where it tiles)")
        print(f"model: {model_note}")
    return 0
