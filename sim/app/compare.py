"""`megasim compare`: a measured timeline next to the simulator's prediction of the same run.

The measured file says which run it is (layer, variant, partition, mapping,
scheduling mode; `measured_trace`), so the simulator rebuilds that graph and
mapping and runs it on the GPU the trace was measured on (its calibrated
profile where one exists), under the dispatch policy given (default
`megasim.contract.modes.DEFAULT_POLICY`, the one the profiles were fitted under, so the simulated
run is the one `simulate` predicts, as in the calibration report's overlay).
The per-task-type error table goes to stdout; `--plot` draws both timelines on one figure (`overlay.plot_overlay`).

Nothing is simulated until the trace is known to be a run of that graph:
`read_measured` checks every field, and `check_against` that each launch
runs every task once, with its op, on SMs the GPU has. A file of the wrong
size is refused before its graph is built.
"""
from __future__ import annotations

import json

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import Geometry, build_graph
from megasim.contract.mapping import MAPPINGS, Mapping, make, validate
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.scheduling import check_mode
from megasim.app.measured_trace import check_against, read_measured


def rebuild(meta: dict, origin: str, blocks: int | None = None, launch: str = "fused"):
    """(graph, mapping, mode) of the run a measured trace names (`read_measured` checked the fields' types).
    A trace of `blocks` blocks is refused before the graph is built if the run has another number of tasks,
    so a small file naming a huge layer costs nothing."""
    try:
        layer = Layer(**meta["layer"])
        variant, part = WinogradVariant(meta.get("variant", 4)), Partition.from_dict(meta["partition"])
        mode = check_mode(meta.get("mode", "static"))
        tasks = Geometry.of(layer, variant, part).num_tasks
        if blocks is not None and blocks != tasks:
            raise MegasimError(f"{blocks} {launch} blocks, but the run it names has {tasks} tasks")
        graph = build_graph(layer, variant, part)
        if meta.get("order") is not None:
            strategy, params = meta.get("strategy") or "file", meta.get("params") or {}
            if strategy in MAPPINGS:  # the order is the run; a registered strategy's options must still be its own
                MAPPINGS.get(strategy).make_options(params)
            mapping = Mapping(order=np.asarray(meta["order"], dtype=np.int64), strategy=strategy, params=params)
        elif meta.get("strategy"):
            mapping = make(graph, meta["strategy"], **(meta.get("params") or {}))
        else:
            raise MegasimError("the trace names no mapping (strategy or order)")
        validate(graph, mapping)
    except MegasimError as exc:
        raise MegasimError(f"{origin}: {exc}") from None
    return graph, mapping, mode


def measured_gpu(meta: dict, given: str | None, origin: str = "the trace") -> str:
    """The GPU to simulate: --gpu, else the one the trace's header names."""
    if given:
        return given
    device = (meta.get("header") or {}).get("device")
    if not device:
        raise MegasimError(f"{origin}: the header names no device; give --gpu")
    from megasim.app.catalog import gpu_names
    from megasim.gpu.microbench_stats import gpu_short_name
    name = gpu_short_name(device)
    if name not in gpu_names():
        raise MegasimError(f"{origin}: the header's device {device!r} is none of the GPUs megasim knows "
                           f"({', '.join(gpu_names())}); give --gpu")
    return name


def sm_limit(meta: dict, simulated: int, given: str | None) -> int:
    """How many SMs a measured block may name: the header's count (the GPU measured), and no more than the
    simulated GPU's when that is the GPU the header names (--gpu may pick a smaller one to compare with)."""
    measured = (meta.get("header") or {}).get("sm_count") or simulated
    return measured if given else min(measured, simulated)


def compare_main(args) -> int:
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.overlay import format_errors, plot_overlay, task_errors
    from megasim.contract.interpreter import RunConfig
    from megasim.engine.interpreter import SimpyInterpreter
    from megasim.engine.result import RunStats
    meta, launches = read_measured(args.measured)
    if args.launch not in launches:
        raise MegasimError(f"{args.measured}: no {args.launch} launch in the trace; it has {', '.join(launches)}")
    measured = launches[args.launch]
    graph, mapping, mode = rebuild(meta, args.measured, len(measured), args.launch)
    gpu, model_note = gpu_for_simulation(measured_gpu(meta, args.gpu, args.measured), args.uncalibrated)
    for launch, records in launches.items():
        check_against(records, graph, sm_limit(meta, gpu.sm_count, args.gpu), args.measured, launch)
    run = SimpyInterpreter(gpu, args.policy).run(graph, mapping, RunConfig(launch=args.launch, mode=mode))
    stats = RunStats.from_raw(run.native, graph, gpu)
    rows = task_errors(measured, stats.records)
    what = (f"{graph.layer.name} F{graph.variant.m}, {mapping.strategy} {mapping.params}, {mode}"
            if args.launch == "fused" else f"{graph.layer.name} F{graph.variant.m}, four non-fused kernels")
    if args.plot:
        plot_overlay(measured, stats.records, args.plot, title=f"{what}: simulated ({gpu.name}, {args.policy}) "
                     f"vs measured", num_sms=gpu.sm_count, utilisation=stats.utilisation(gpu))
    if args.json:
        print(json.dumps({"run": what, "launch": args.launch, "gpu": gpu.name, "policy": args.policy,
                          "model": model_note, "errors": rows}, default=float))
        return 0
    print(f"{what}: measured ({args.measured}) against simulated on {gpu.name}, policy {args.policy}")
    print(format_errors(rows))
    print(model_note)
    if args.plot:
        print(f"wrote {args.plot}")
    return 0


