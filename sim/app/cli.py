"""`megasim`: parse, load the scenario, call one function, print. Bad input is one line and exit 2."""
from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import sys

from megasim.app.arguments import Parser as _Parser
from megasim.app.arguments import BooleanOnce, check_counts, check_needs
from megasim.app.console import Terminated, error_line, terminate
from megasim.app.choices import (add_choice_args, add_option_flags, add_policy_args, describe, mapping_from_args,
                                  options_from_args)
from megasim.contract.build import AXES
from megasim.contract.resources import PRECISIONS
from megasim.app.search.arguments import search_parser
from megasim.contract.errors import MegasimError
from megasim.contract.modes import DEFAULT_POLICY, MODES


def _layer(args):
    from megasim.app.catalog import resolve_layer
    return resolve_layer(args.layer, args.shape)


MODE_HELP = ("megakernel scheduling: static (a block per task), persistent (resident blocks loop over tickets) "
             "or ready_queue (resident blocks pop tasks whose parents are done)")


def _problem_args(p):
    p.add_argument("--layer", help="a layer from scenarios/layers (default ResNet-2)")
    p.add_argument("--shape", help="N,C,H,W,K of a custom 3x3 stride-1 layer")
    p.add_argument("--variant", type=int, help="m of F(m x m, 3 x 3): 2, 4 or 6 (default 4, or the --mapping file's)")
    p.add_argument("--partition", help="overrides on the GPU's partition table (scenarios/partitions), "
                                      "e.g. tiles_per_group=64,gemm_k_per_task=32")
    add_choice_args(p)


def _problem(args, gpu_name: str):
    """(layer, variant, partition, where the partition came from, mode) from a mapping file, or from
    --layer/--shape, --variant and the GPU's partition table."""
    if args.mapping:
        from megasim.app.mapping_flags import problem_from_mapping_file
        layer, variant, partition, mode = problem_from_mapping_file(args)
        return layer, variant, partition, f"the --mapping file {args.mapping}", args.mode or mode
    from megasim.app.catalog import partition_and_source
    from megasim.contract.problem import WinogradVariant
    layer = _layer(args)
    variant = WinogradVariant(args.variant) if args.variant is not None else WinogradVariant()
    return (layer, variant, *partition_and_source(layer, gpu_name, args.partition), args.mode or MODES[0])


def cmd_simulate(args) -> int:
    if args.precision not in (None, "fp32") and args.network:
        raise MegasimError(f"--precision {args.precision} is for one layer's simulation; --network runs FP32 builds "
                           "(or each --mappings file's own build)")
    if args.all_builds and args.network:
        raise MegasimError("--all-builds ranks one layer's builds; give --layer or --shape instead of --network "
                           "(megasim search --network picks a build per layer)")
    if args.network:
        from megasim.app.network_sim import simulate_network
        return simulate_network(args)
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.outputs import write_simulation_outputs
    from megasim.app.report import print_call, print_simulation
    from megasim.contract.graph import build_graph
    from megasim.engine.simulate import simulate
    gpu, model_note, intervals = simulation_model(args.gpu, args.uncalibrated, args.profile)
    if args.all_builds:
        from megasim.app.pick import simulate_all_builds
        return simulate_all_builds(args, gpu, model_note, _problem)
    from megasim.app.calibrate.uncertainty import Uncertainty
    from megasim.app.mapping_flags import gemm_precision_and_partition
    from megasim.contract.build import simulated_builds
    layer, variant, partition, partition_source, mode = _problem(args, gpu.name)
    gemm, precision, partition, partition_source = gemm_precision_and_partition(args, layer, partition,
                                                                                partition_source)
    graph = build_graph(layer, variant, partition)
    mapping = mapping_from_args(graph, args)
    result = simulate(graph, mapping, gpu, args.policy, options_from_args(args)[1], mode, gemm, precision)
    written = write_simulation_outputs(args, result, layer, gpu, mapping)
    call = Uncertainty.from_dict(intervals).call(result.fused.time_us, result.nonfused.time_us) if intervals else None
    if args.json:
        builds = simulated_builds(variant.m, mode, gemm, partition, precision)
        print(json.dumps({**result.to_json(), "builds": builds, "partition": partition.to_dict(),
                          "partition_source": partition_source, "uncertainty": call, "model": model_note}))
    else:
        print_simulation(graph, gpu, result, partition_source)
        if call:
            print_call(call)
        print(f"model: {model_note}")
    for line in written:
        print(line, file=sys.stderr if args.json else sys.stdout)
    return 0


def cmd_layers(args) -> int:
    from megasim.app.catalog import layer_names, load_layer, network_names
    for name in layer_names():
        layer = load_layer(name)
        print(f"{layer.name:10s} {layer.shape()}")
    print("networks: " + ", ".join(network_names()))
    return 0


def cmd_gpus(args) -> int:
    """The specs of scenarios/gpus, then those `calibrate --spec-only` wrote under out/calibrate/gpus (by path)."""
    from megasim.app.calibrate.raw import OUT
    from megasim.app.catalog import gpu_names, load_gpu
    for name in [*gpu_names(), *(str(p) for p in sorted((OUT / "gpus").glob("*.toml")))]:
        g = load_gpu(name)
        print(f"{name:6s} {g.full_name:28s} {g.sm_count:4d} SMs  {g.peak_fp32_tflops:5.1f} TFLOP/s FP32  "
              f"{g.dram_gbps / 1000:4.2f} TB/s  L2 {g.l2_bytes / 2**20:.0f} MiB")
    return 0


def cmd_mappings(args) -> int:
    print(describe())
    return 0


def cmd_calibrate(args) -> int:
    from megasim.app.calibrate.command import calibrate_main
    return calibrate_main(args)


def cmd_validate(args) -> int:
    from megasim.app.calibrate.run import validate_paths, validate_profile
    profile, measurements = validate_paths(args.gpu, args.profile, args.measurements)
    log = (lambda *_: None) if args.json else print
    summary = validate_profile(profile, measurements, args.out, args.jobs, log=log, report=args.report,
                               allow_other_gpu=args.allow_other_gpu, corpus=args.corpus, progress=not args.json)
    if args.json:
        print(json.dumps(headline(summary, profile, measurements), default=float))
    return 0


def headline(summary: dict, profile, measurements) -> dict:
    """`validate --json`: the MAPE figures under flat names, then the whole summary."""
    mape = summary["mape"]
    flat = {f"{split}_mape_{kind}": mape[split][kind] for split in mape for kind in ("fused", "nonfused")}
    return {"profile": str(profile), "measurements": str(measurements), **flat, "summary": summary}


def cmd_bench(args) -> int:
    if "precision" in args.given and (args.network or args.mapping):
        raise MegasimError("--precision picks the precisions of a layer's decision space; --network and --mapping "
                           "time fixed builds (a mapping file names its own precision)")
    if args.network:
        from megasim.app.bench_network import bench_network
        return bench_network(args)
    from megasim.app.bench import bench_main
    return bench_main(args) or 0


MAPPINGS_HELP = ("with --network: a folder of per-layer mapping files, DIR/<layer>/best.json (as megasim search "
                 "--network writes) or DIR/<layer>.json, <layer> being the layer's name in the network file "
                 "(e.g. conv4_x); layers without one run under the default mapping")


def _network_args(p, verb: str) -> None:
    p.add_argument("--network", help=f"{verb} every 3x3 stride-1 layer of a network from scenarios/networks "
                                     "(megasim layers lists them); prints a per-layer table and count-weighted "
                                     "totals, and lists the convolutions left out")
    p.add_argument("--mappings", metavar="DIR", help=MAPPINGS_HELP)


def cmd_search(args) -> int:
    from megasim.app.search.command import search_main
    return search_main(args)


def _bench_args(p):
    _problem_args(p)
    p.add_argument("--gpu", help="whose partition table (scenarios/partitions) to use; default: this device's")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--precision", choices=(*PRECISIONS, "all"),
                   help="the GEMM precisions swept and picked from: fp32 (FFMA), 3xtf32 (tensor cores, on the warp "
                        "body, each judged against its fp32 twin, timed too) or all. Default: all")
    p.add_argument("--out", help="write the results JSON here")
    p.add_argument("--json", action="store_true")
    _network_args(p, "measure")
    p.add_argument("--plot", help="with --network: write the bar chart of each layer's time here")
    p.add_argument("--trace", help="also write the measured per-block timelines (fused and non-fused) of the "
                                   "layer here, a Perfetto trace that `megasim compare` reads")
    p.set_defaults(func=cmd_bench)


def _calibration_commands(sub) -> None:
    """`calibrate` and `validate`."""
    cal = sub.add_parser("calibrate", help="measure this machine's GPU (microbenchmarks, training runs) and fit a profile")
    cal.add_argument("--gpu", default="h200", help="a GPU of scenarios/gpus, a spec file, or the short name of a GPU "
                     "megasim has no spec of (its spec is written from the device, beside the profile)")
    cal.add_argument("--out", default=None, help="profile TOML (default out/calibrate/<gpu>.toml)")
    cal.add_argument("--raw", default=None, help="where raw measurements go (default out/calibrate/raw), or with "
                                                 "--from-raw are read from (default the committed "
                                                 "scenarios/calibrations/raw)")
    cal.add_argument("--reps", type=int, default=20)
    cal.add_argument("--jobs", type=int, default=2, help="worker processes of the fit and its validation")
    cal.add_argument("--scheduler", help="local: measure on every GPU of this host at once, one Dask worker each "
                     "(local:N the first N); they must be one model")
    cal.add_argument("--from-raw", action="store_true", help="skip measuring; fit from the raw files already there")
    cal.add_argument("--corpus", type=int, metavar="COUNT",
                     help="measure the first COUNT generated corpus shapes into <raw>/<gpu>_corpus.jsonl (resumable), no fit")
    cal.add_argument("--budget-s", type=float, help="seconds of measuring in this call (default: all of it; with "
                     "--corpus 500); a call stopped by it says what is left, and the same command continues")
    cal.add_argument("--spec-only", action="store_true", help="write a spec of this GPU (scenarios/gpus form) from what "
                     "the device reports and the microbenchmarks measure, to --out (default out/calibrate/gpus/<gpu>.toml)")
    cal.add_argument("--sharing", choices=("jobs", "resident"), default="resident",
                     help="who shares an SM's FP32 issue (default resident: the law resident_sharing, which also takes the "
                          "per-task cost from <gpu>_trace_resnet2.json and the GEMM and output block laws from a "
                          "per-block trace sample; 'jobs' fits them all from the kernel times)")
    cal.add_argument("--trace-sample", metavar="NPZ",
                     help="with --sharing resident: the trace sample the block laws are fitted on (default "
                          "<raw>/<gpu>_trace_sample.npz, else another GPU's sample there)")
    cal.set_defaults(func=cmd_calibrate)
    val = sub.add_parser("validate", help="predict every measured run under a profile; write a report")
    val.add_argument("--gpu", help="take the committed profile and measurements of this GPU (h200, h100)")
    val.add_argument("--profile", help="profile TOML (default: the --gpu's committed one)")
    val.add_argument("--measurements", help="runs JSON (default: the --gpu's committed scenarios/calibrations/raw one)")
    val.add_argument("--json", action="store_true", help="print the held-out and training MAPE and the summary as JSON")
    val.add_argument("--out", default="out/validate",
                     help="folder for the report, figures/ and results/calibration/ (default out/validate; "
                          "--out docs rewrites the committed report)")
    val.add_argument("--report", help="the report's path (default <out>/calibration.md)")
    val.add_argument("--allow-other-gpu", action="store_true",
                     help="validate against runs measured on another GPU (a transfer study); refused otherwise")
    val.add_argument("--jobs", type=int, default=2)
    val.add_argument("--corpus", action=BooleanOnce, default=True,
                     help="predict the held-out generated corpus shapes too, where <gpu>_corpus.jsonl lies beside the "
                          "measurements (default; --no-corpus skips them)")
    val.set_defaults(func=cmd_validate)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("megasim")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """`--version`, looked up only when asked: importlib.metadata would cost every other command 10 ms."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"megasim {_version()}")
        parser.exit()


def _cmd_compare(args) -> int:
    from megasim.app.compare import compare_main
    return compare_main(args)


def _compare_parser(sub) -> None:
    p = sub.add_parser("compare", help="a measured per-block trace (bench --trace) against the simulated run")
    p.add_argument("measured", help="a trace from `megasim bench --trace`, or a calibration raw trace")
    p.add_argument("--launch", choices=("fused", "nonfused"), default="fused",
                   help="which launch of the trace to compare (default fused)")
    p.add_argument("--gpu", help="simulate this GPU (default: the one the trace was measured on)")
    p.add_argument("--uncalibrated", action="store_true", help="use the datasheet spec even with a profile")
    p.add_argument("--policy", default=DEFAULT_POLICY,
                   help=f"block dispatch policy of the simulation (default {DEFAULT_POLICY})")
    p.add_argument("--plot", help="write the overlay figure here (.png, .pdf or .svg)")
    p.add_argument("--json", action="store_true", help="print the error table as JSON")
    p.set_defaults(func=_cmd_compare)


def _simulate_parser(sub):
    """`simulate`, with the glossary of its output as the epilog of its --help."""
    from megasim.app.glossary import SIMULATE_GLOSSARY
    sim = sub.add_parser("simulate", help="predict fused and non-fused time for one layer and mapping",
                         epilog=SIMULATE_GLOSSARY, formatter_class=argparse.RawDescriptionHelpFormatter)
    _problem_args(sim)
    sim.add_argument("--gpu", default="h200", help="a GPU from scenarios/gpus (with its committed calibration "
                                                   "profile, if any), or a path to a spec TOML of one's own (its "
                                                   "figures only: no profile unless --profile)")
    add_policy_args(sim)
    sim.add_argument("--mode", choices=MODES, help=MODE_HELP + "; default static, or the --mapping file's")
    sim.add_argument("--gemm", choices=AXES["gemm"],
                     help="the GEMM task's body, fused and non-fused: generic, or warp (the warp-tiled body, on the "
                          "partition widened to 128 output channels per GEMM task where that tiles, as bench runs it); "
                          "default generic, or the --mapping file's")
    sim.add_argument("--precision", choices=PRECISIONS,
                     help="the GEMM's products: fp32 (FFMA), or 3xtf32 (three TF32 tensor-core passes, on the warp "
                          "body: --gemm warp); 3xtf32 needs a model with the tensor_core_gemm law (the H200's "
                          "calibrated profile has it); default fp32, or the --mapping file's")
    sim.add_argument("--all-builds", action="store_true",
                     help="rank every build of the layer (fused in each mode and non-fused, each variant, each GEMM "
                          "body its partition tiles) by predicted time: the simulator's pick comes first")
    sim.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    sim.add_argument("--trace", help="write a Perfetto/Chrome trace of the megakernel here")
    sim.add_argument("--plot", help="write a per-SM timeline of the megakernel here (.png, .pdf or .svg; "
                                    "with --network: a bar chart of each layer's time)")
    _network_args(sim, "simulate")
    calibrated = sim.add_mutually_exclusive_group()
    calibrated.add_argument("--uncalibrated", action="store_true",
                            help="use the datasheet spec even where a calibrated profile exists")
    calibrated.add_argument("--profile", metavar="TOML",
                            help="a calibration profile to use instead of the GPU's committed one (a study "
                                 "profile), or over a --gpu spec file")
    sim.set_defaults(func=cmd_simulate)
    return sim


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="megasim", description=__doc__)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sim = _simulate_parser(sub)
    sub.add_parser("layers", help="list the layer scenarios").set_defaults(func=cmd_layers)
    sub.add_parser("gpus", help="list the GPU specs (scenarios/gpus, then those calibrate --spec-only wrote under "
                                "out/calibrate/gpus)").set_defaults(func=cmd_gpus)
    sub.add_parser("mappings", help="list mapping strategies and dispatch policies").set_defaults(func=cmd_mappings)
    _calibration_commands(sub)
    bench = sub.add_parser("bench", help="run the real kernels and baselines on this machine's GPU")
    _bench_args(bench)
    search_parser(sub, MODE_HELP).set_defaults(func=cmd_search)
    _compare_parser(sub)
    add_option_flags(sim, bench)
    return parser


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
SIMULATOR_COMMANDS = ("simulate", "search", "validate")


def single_blas_thread() -> None:
    """One OpenBLAS thread, unless the user chose a number: NumPy's OpenBLAS starts a thread per core on import,
    which spins idle for about 45 ms of CPU (a third of NumPy's import on the 2-core machine), and the simulator
    does no dense linear algebra (search and validate parallelise over processes, which inherit this). `bench`
    keeps its threads for its float64 reference convolution. Only before NumPy's first import does it count."""
    if "numpy" not in sys.modules and not any(v in os.environ for v in BLAS_THREAD_VARIABLES):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def main(argv=None) -> int:
    parser = build_parser()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, terminate)
    try:
        args = parser.parse_args(argv)
        check_needs(args)
        check_counts(args)
        if getattr(args, "command", None) in SIMULATOR_COMMANDS:
            single_blas_thread()
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        if getattr(args, "command", None) == "calibrate":
            from megasim.app.calibrate.raw import calibrate_defaults
            calibrate_defaults(args)
        return _run(args)
    except MegasimError as exc:
        print(error_line(f"megasim: error: {exc}"), file=sys.stderr)
        return 2
    except OSError as exc:
        print(error_line(f"megasim: error: {exc.filename or ''}: {exc.strerror}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return 128 + signal.SIGTERM if isinstance(exc, Terminated) else 130


def _run(args) -> int:
    """The command, its outputs checked first and renamed into place only if it finishes; a reader that
    closes the pipe early (`megasim layers | head -1`) ends it quietly, as it would `cat`."""
    from megasim.app.outputs import preflight
    from megasim.io.writing import all_or_nothing
    with all_or_nothing():
        preflight(args)
        try:
            rc = args.func(args)
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 128 + signal.SIGPIPE
    return rc


if __name__ == "__main__":
    sys.exit(main())
