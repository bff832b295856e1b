"""`megasim simulate --network NAME`: each distinct layer of a network through the SimPy engine.

A layer with a file in `--mappings` runs that file's whole build: variant, partition,
mapping, scheduling mode, GEMM body and precision (`--mode` still overrides the mode); every other
layer runs the command's own choice (`--variant`, `--partition`,
`--strategy` and its options, `--mode`), exactly as `megasim simulate
--shape` of that layer would.
"""
from __future__ import annotations

import json
from pathlib import Path

from megasim.app.catalog import partition_and_source
from megasim.app.network_spec import NetworkLayer, load_network_spec
from megasim.app.choices import mapping_from_args, options_from_args
from megasim.app.network import LayerTimes, plan, report, run_rows
from megasim.app.network_report import format_network
from megasim.app.report import builds_text
from megasim.contract.errors import MegasimError
from megasim.contract.problem import WinogradVariant
from megasim.contract.scheduling import MODES

SINGLE_LAYER_FLAGS = ("layer", "shape", "mapping", "trace")


def refuse_single_layer_flags(args) -> None:
    given = [f"--{name}" for name in SINGLE_LAYER_FLAGS if getattr(args, name, None)]
    if given:
        raise MegasimError(f"--network runs every layer of a network; it takes no {', '.join(given)} "
                           "(per-layer mappings come from --mappings DIR)")


def _graph_and_mapping(layer, path: Path | None, args, gpu):
    """The graph, mapping, mode, GEMM body, precision and where the partition came from of one layer: from its
    mapping file (the whole build it names), or from the command's flags (FP32)."""
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping.io import build_of, load_mapping, read_mapping_file
    if path is None:
        variant = WinogradVariant(args.variant if args.variant is not None else WinogradVariant().m)
        partition, source = partition_and_source(layer, gpu.name, args.partition)
        graph = build_graph(layer, variant, partition)
        return graph, mapping_from_args(graph, args), args.mode or MODES[0], "generic", "fp32", source
    doc = read_mapping_file(path)
    build = build_of(doc, str(path))
    graph = build_graph(layer, WinogradVariant(build.variant), build.partition)
    return (graph, load_mapping(path, graph), args.mode or build.mode, build.gemm, build.precision,
            f"the mapping file {path}")


def simulate_layer(entry: NetworkLayer, path: Path | None, args, gpu) -> LayerTimes:
    from megasim.engine.simulate import simulate
    graph, mapping, mode, gemm, precision, source = _graph_and_mapping(entry.layer, path, args, gpu)
    result = simulate(graph, mapping, gpu, args.policy, options_from_args(args)[1], mode, gemm, precision)
    return LayerTimes(result.fused.time_us, result.nonfused.time_us,
                      {"variant": graph.variant.m, "mode": mode, "gemm": gemm, "precision": precision,
                       "strategy": result.strategy,
                       "params": result.params, "num_tbs": result.num_tbs, "infusible": result.infusible,
                       "sim_seconds": result.sim_seconds, "fused_sim_cpu_s": result.fused_sim_cpu_s,
                       "nonfused_sim_cpu_s": result.nonfused_sim_cpu_s,
                       "fused_tbs_per_cpu_s": result.fused_tbs_per_cpu_s,
                       "partition": graph.partition.to_dict(), "partition_source": source})


def partition_lines(rows: list[dict]) -> list[str]:
    """Where each layer's partition came from, one line per source: the table is keyed by the names of
    scenarios/layers, so a network's layer of the same shape gets the table's default, as `--shape` does."""
    by_source: dict[str, list[str]] = {}
    for r in rows:
        by_source.setdefault(r["partition_source"], []).append(r["name"])
    return [f"partition of {', '.join(names)} from: {source}" for source, names in by_source.items()]


def build_lines(rows: list[dict]) -> list[str]:
    """The builds each layer simulated, every axis named, one line per distinct pair of builds."""
    by_build: dict[str, list[str]] = {}
    for r in rows:
        key = builds_text(r["variant"], r["mode"], r["gemm"], r["precision"])
        by_build.setdefault(key, []).append(r["name"])
    return [f"builds of {', '.join(names)}: {key}" for key, names in by_build.items()]


def simulate_network(args) -> int:
    """Entry point of `megasim simulate --network`: the table (or --json), and the --plot."""
    from megasim.app.calibrate.profile import gpu_for_simulation
    refuse_single_layer_flags(args)
    net = load_network_spec(args.network)
    jobs = plan(net, args.mappings)
    gpu, model_note = gpu_for_simulation(args.gpu, args.uncalibrated, args.profile)
    rows = run_rows(jobs, lambda entry, path: simulate_layer(entry, path, args, gpu))
    doc = report(net, rows, {"gpu": gpu.name, "model": model_note, "measured": False})
    title = f"{net.name} on {gpu.full_name} (simulated), batch {net.layers[0].layer.n}"
    if args.plot:
        from megasim.app.network_plot import plot_network
        plot_network(doc, args.plot, title)
    if args.json:
        print(json.dumps(doc))
    else:
        print(format_network(doc, title))
        print("\n".join(partition_lines(doc["layers"]) + build_lines(doc["layers"])))
        print(f"model: {model_note}")
    return 0
