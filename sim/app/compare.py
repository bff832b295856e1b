"""`megasim compare`: a measured timeline next to the simulator's prediction of the same run.

The measured file says which run it is (layer, variant, partition, mapping,
scheduling mode; `measured_trace`), so the simulator rebuilds that graph and
mapping and runs it on the GPU the trace was measured on (its calibrated
profile where one exists), under the dispatch policy given (default
`gpc_interleaved`, the first-wave order measured on the H200, as in the
calibration report's overlay). The per-task-type error table goes to
stdout; `--plot` draws both timelines on one figure (`overlay.plot_overlay`).
"""
from __future__ import annotations

import json

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import Mapping, make, validate
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.scheduling import check_mode
from megasim.app.measured_trace import read_measured

DEFAULT_POLICY = "gpc_interleaved"


def rebuild(meta: dict, origin: str):
    """(graph, mapping, mode) of the run a measured trace names."""
    try:
        layer = Layer(**meta["layer"])
        graph = build_graph(layer, WinogradVariant(int(meta.get("variant", 4))), Partition.from_dict(meta["partition"]))
        mode = check_mode(meta.get("mode", "static"))
    except (KeyError, TypeError) as exc:
        raise MegasimError(f"{origin}: the trace's layer/variant/partition are not valid ({exc})") from None
    if meta.get("order") is not None:
        mapping = Mapping(order=np.asarray(meta["order"], dtype=np.int64), strategy=str(meta.get("strategy", "file")),
                          params=meta.get("params") or {})
    elif meta.get("strategy"):
        mapping = make(graph, meta["strategy"], **(meta.get("params") or {}))
    else:
        raise MegasimError(f"{origin}: the trace names no mapping (strategy or order)")
    validate(graph, mapping)
    return graph, mapping, mode


def measured_gpu(meta: dict, given: str | None) -> str:
    """The GPU to simulate: --gpu, else the one the trace's header names."""
    if given:
        return given
    device = (meta.get("header") or {}).get("device")
    if not device:
        raise MegasimError("the trace's header names no device; give --gpu")
    from megasim.gpu.microbench_stats import gpu_short_name
    return gpu_short_name(device)


def compare_main(args) -> int:
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.overlay import format_errors, plot_overlay, task_errors
    from megasim.contract.interpreter import RunConfig
    from megasim.engine.interpreter import SimpyInterpreter
    from megasim.engine.result import RunStats
    meta, launches = read_measured(args.measured)
    if args.launch not in launches:
        raise MegasimError(f"{args.measured}: no {args.launch} launch in the trace; it has {', '.join(launches)}")
    graph, mapping, mode = rebuild(meta, args.measured)
    gpu, model_note = gpu_for_simulation(measured_gpu(meta, args.gpu), args.uncalibrated)
    measured = launches[args.launch]
    if len(measured) != graph.num_tasks:
        raise MegasimError(f"{args.measured}: {len(measured)} {args.launch} blocks, but the run it names has "
                           f"{graph.num_tasks} tasks")
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


