"""The raw calibration files, each checked whole as it is read, before any fitting or simulating.

`megasim calibrate` and `megasim validate` spend from seconds to minutes on
the raw measurements, and used to find a bad one on the way: a torn corpus
line as a JSONDecodeError, `records: "x"` as a TypeError, a micro-benchmark
file without figures as a profile silently left on datasheet values. Here
each kind of raw file has one loader that checks every field it holds
(`megasim.io.schema`: types, finite non-negative times, the runs'
layers, partitions and mappings) and raises one MegasimError naming the file
and the field; the commands call them all before their work starts.

It also fixes where the calibration commands read and write by default: a
measuring `calibrate` writes its raw files and profile under `out/calibrate`,
never into the installed package, and `calibrate --from-raw` reads the
committed raw folder (package data, read only).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from megasim.app.calibrate.measurements import Micros, Run, check_run
from megasim.app.catalog import SCENARIOS
from megasim.contract.errors import MegasimError
from megasim.io.files import read_json, read_json_lines
from megasim.io.schema import Items, Str, Text, float_in, int_in, parse

COMMITTED_RAW = SCENARIOS / "calibrations" / "raw"
OUT = Path("out") / "calibrate"

Positive = float_in(0.0, 1e12, above=True)
TORN = ("; a line torn by an interrupted `calibrate --corpus` can be deleted, and a rerun measures its shape "
        "again")


def present(path) -> bool:
    """Whether a raw file is there to read: a link that leads nowhere (broken, or a loop) counts, so that reading
    it says what is wrong instead of the fit going on as if the file were missing."""
    return Path(path).exists() or Path(path).is_symlink()


def raw_paths(raw_dir, gpu: str) -> dict:
    from megasim.app.calibrate.trace_law import default_sample
    raw = Path(raw_dir)
    return {"micro": raw / f"{gpu}_micro.json", "runs": raw / f"{gpu}_runs.json",
            "trace": raw / f"{gpu}_trace_resnet2.json", "corpus": raw / f"{gpu}_corpus.jsonl",
            "kernel_graph": raw / f"{gpu}_kernel_graph_times.jsonl", "trace_sample": default_sample(raw, gpu),
            "builds": raw / f"{gpu}_builds.json", "tensor_core": raw / f"{gpu}_tensor_core.json",
            "corpus_builds": raw / f"{gpu}_corpus_builds.json"}


# Which collector part of `calibrate_measure` makes each raw file the fit reads, and whether the fit needs it.
MAKERS = {"micro": ("hardware", True), "runs": ("runs", True), "trace": ("runs", False),
          "trace_sample": ("trace_sample", False), "kernel_graph": ("kernel_graph", False),
          "builds": ("builds", False), "tensor_core": ("tensor_core", False), "corpus": ("corpus", False),
          "corpus_builds": ("corpus_builds", False)}


def check_raw(paths: dict, gpu: str, raw_dir, resident: bool, sample_given: bool = False) -> None:
    """Refuse, before any work, a raw folder that lacks a file the fit needs: one line naming the files and the
    command that measures them (a resident fit needs the per-block traces as well, the trace sample unless one
    is given)."""
    wanted = {"trace"} | (set() if sample_given else {"trace_sample"}) if resident else set()
    need = [k for k, (_, required) in MAKERS.items() if (required or k in wanted) and not Path(paths[k]).exists()]
    if need:
        parts = ",".join(dict.fromkeys(MAKERS[k][0] for k in need))
        jobs = "; or fit without per-block traces: --sharing jobs" if set(need) <= wanted else ""
        raise MegasimError(f"{raw_dir} lacks {', '.join(Path(paths[k]).name for k in need)}: measure them on the GPU "
                           f"with python -m megasim.app.calibrate.measure --gpu {gpu} --parts {parts} --out {raw_dir}"
                           + jobs)


def calibrate_defaults(args) -> None:
    """Fill `calibrate`'s --out and --raw, and refuse flags `--corpus` would ignore, before any work (a flag that
    needs another, --trace-sample --sharing resident, is `megasim.app.arguments.NEEDS`'s).

    A measuring run writes under out/calibrate (the raw files in raw/, the profile as <gpu>.toml);
    `--from-raw` reads the committed raw folder unless --raw names another."""
    if args.jobs < 1:
        raise MegasimError(f"--jobs must be a positive number of worker processes, got {args.jobs}")
    if args.spec_only:
        clash = [flag for flag, value in (("--corpus", args.corpus is not None), ("--trace-sample", args.trace_sample),
                                          ("--budget-s", args.budget_s is not None), ("--scheduler", args.scheduler))
                 if value]
        if clash:
            raise MegasimError(f"--spec-only writes the GPU's spec and fits nothing; drop {', '.join(clash)}")
        gpu = args.gpu.lower()
        if not is_short_name(gpu):
            raise MegasimError(f"--spec-only names a GPU (a short name such as h100), not {args.gpu!r}")
        args.raw = args.raw or str(COMMITTED_RAW if args.from_raw else OUT / "raw")
        args.out = args.out or str(OUT / "gpus" / f"{gpu}.toml")
        return
    for flag, given in (("--budget-s", args.budget_s is not None), ("--scheduler", args.scheduler)):
        if given and (args.from_raw or args.corpus is not None and flag == "--scheduler"):
            raise MegasimError(f"{flag} is for measuring a whole calibration; "
                               f"{'--from-raw measures nothing' if args.from_raw else '--corpus measures on one GPU'}"
                               f": drop one of them")
    if args.scheduler:
        from megasim.app.search.dask_runner import local_workers
        if args.scheduler.partition(":")[0] != "local":
            raise MegasimError(f"calibrate --scheduler spreads the measuring over this host's GPUs: local or "
                               f"local:N, not {args.scheduler!r}")
        local_workers(args.scheduler, 1)
    _resolve_spec(args)
    gpu = args.gpu_name
    given = [flag for flag, value in (("--out", args.out), ("--from-raw", args.from_raw),
                                      ("--trace-sample", args.trace_sample)) if value]
    if args.corpus is not None and given:
        raise MegasimError(f"--corpus only measures corpus shapes into <raw>/{gpu}_corpus.jsonl and fits nothing; "
                           f"drop {', '.join(given)} (or --corpus)")
    if args.raw is None:
        args.raw = str(COMMITTED_RAW if args.from_raw else OUT / "raw")
    if args.out is None and args.corpus is None:
        args.out = str(OUT / f"{gpu}.toml")
    if args.generated:
        args.spec = str(Path(args.out or OUT / f"{gpu}.toml").parent / "gpus" / f"{gpu}.toml")
        if args.from_raw and not Path(args.spec).exists():
            raise MegasimError(f"no spec of {gpu}: neither scenarios/gpus nor {args.spec} has one; measuring writes "
                               f"it: megasim calibrate --gpu {gpu} (on that GPU)")


def is_short_name(name: str) -> bool:
    """Whether `name` can name a GPU's files (<gpu>_micro.json, gpus/<gpu>.toml): letters, digits, - and _."""
    return name.replace("_", "").replace("-", "").isalnum()


def _resolve_spec(args) -> None:
    """`args.spec`, the spec the fit runs over, and `args.gpu_name`: a GPU of scenarios/gpus or a spec file is
    read as it is; any other name is a GPU megasim has no spec of, whose spec `calibrate` writes from the device
    beside the profile (<out folder>/gpus/<gpu>.toml), so `--gpu` of that path finds the profile too."""
    from megasim.app.catalog import gpu_names, is_spec_file, load_gpu
    name = args.gpu.lower()
    args.generated = not is_spec_file(args.gpu) and name not in gpu_names()
    if args.generated:
        if not is_short_name(name):
            raise MegasimError(f"--gpu names a GPU (a short name such as rtx4090) or a spec file, not {args.gpu!r}")
        args.gpu_name, args.spec = name, None
    else:
        args.gpu_name, args.spec = load_gpu(args.gpu).name, args.gpu


def fitted_note(gpu: str, out, raw, measured: bool, spec: str | None = None) -> str:
    """What `calibrate` prints when it is done: where it wrote, and how to use and validate the profile."""
    committed = Path(raw).resolve() == COMMITTED_RAW.resolve()
    runs = "" if committed else f" --measurements {Path(raw) / f'{gpu}_runs.json'}"
    from megasim.app.catalog import is_spec_file
    own = spec is not None and is_spec_file(spec)
    return "\n".join([
        *([f"wrote the raw measurements to {raw}"] if measured else []),
        f"wrote {out}",
        (f"  simulate under it:  megasim simulate --gpu {spec}" if own else
         f"  simulate under it:  megasim simulate --gpu {gpu} --profile {out}"),
        f"  validate it:        megasim validate{'' if own else f' --gpu {gpu}'} --profile {out}{runs}",
        "  (validate also stores the held-out prediction intervals in its [uncertainty] section; until then "
        "simulate gives point predictions without intervals)"])


# --- <gpu>_corpus.jsonl ---------------------------------------------------------------------------------------

@dataclass(kw_only=True)
class CorpusLine:
    """One measured corpus shape: its runs (none where measuring it failed, with the error)."""
    __pydantic_config__ = {"extra": "allow"}
    shape: Annotated[str, Str(min_length=1)]
    split: Literal["train", "heldout"]
    runs: list[Run]


def load_corpus(path) -> list[dict]:
    """The lines of a corpus file, every run checked as `load_runs` checks a runs file's."""
    path = Path(path)
    lines = []
    for i, doc in read_json_lines(path, TORN):
        where = f"{path}: line {i}"
        if not isinstance(doc, dict):
            raise MegasimError(f"{where}: not a corpus shape (a JSON object with shape, split and runs)")
        parse(CorpusLine, doc, where)
        for j, run in enumerate(doc["runs"]):
            if run["split"] != doc["split"]:
                raise MegasimError(f"{where}: runs[{j}].split is {run['split']!r} but the shape's is "
                                   f"{doc['split']!r}; a shape is fitted or held out whole")
            check_run(run, f"{where}: runs[{j}]")
        lines.append(doc)
    return lines


def corpus_runs(path) -> list[dict]:
    """Every run of a corpus file (`megasim calibrate --corpus`), each carrying its shape's split; none without one."""
    path = Path(path)
    return [run for line in load_corpus(path) for run in line["runs"]] if present(path) else []


# --- <gpu>_micro.json ---------------------------------------------------------------------------------------

@dataclass(kw_only=True)
class _Fp32:
    __pydantic_config__ = {"extra": "allow"}
    clock_mhz: Positive


@dataclass(kw_only=True)
class _Dram:
    __pydantic_config__ = {"extra": "allow"}
    read_gbps: Positive
    copy_gbps: Positive


@dataclass(kw_only=True)
class _L2:
    __pydantic_config__ = {"extra": "allow"}
    gbps: Positive
    knee_bytes: Positive


@dataclass(kw_only=True)
class _Atomics:
    __pydantic_config__ = {"extra": "allow"}
    latency_cycles: Positive
    spin_poll_cycles: Positive


@dataclass(kw_only=True)
class _Dispatch:
    __pydantic_config__ = {"extra": "allow"}
    latency_cycles: Positive
    blocks_per_us: Positive
    first_wave_lead_sms: list[int_in(0, 100_000)] = field(default_factory=list)


@dataclass(kw_only=True)
class _Launch:
    __pydantic_config__ = {"extra": "allow"}
    graph_us: Positive
    plain_us: Positive


@dataclass(kw_only=True)
class Micro:
    """Every figure stage 1 takes from the micro-benchmarks (`fit.hardware_overrides`): one missing would leave
    the profile on the datasheet's value without a word."""
    __pydantic_config__ = {"extra": "allow"}
    header: dict[Text, Any] = field(default_factory=dict)
    fp32: _Fp32
    dram: _Dram
    l2: _L2
    atomics: _Atomics
    dispatch_summary: _Dispatch
    launch: _Launch
    dispatch: list[dict[Text, Any]] = field(default_factory=list)


def load_micro(path) -> dict:
    doc = read_json(path)
    if not isinstance(doc, dict) or not doc:
        raise MegasimError(f"{path}: holds no micro-benchmark figures (a JSON object with fp32, dram, l2, atomics, "
                           "dispatch_summary and launch, as `megasim calibrate` measures them)")
    parse(Micro, doc, str(path))
    return doc


# --- <gpu>_trace_resnet2.json and <gpu>_trace_sample.npz: per-block traces ------------------------------------
# The record and run rules are `megasim.app.measured_trace`'s, which `megasim compare` reads the same files by.

def load_raw_trace(path, num_sms: int) -> dict:
    """A calibration raw trace (the run, and a record per block), checked as `compare` checks it: every field,
    each block's times in order, and its tasks those of the run's graph, one each with the graph's op, on SMs
    the GPU has. Returned as read, for the fit's record dicts."""
    from megasim.app.calibrate.trace_law import graph_of
    from megasim.app.measured_trace import check_against, read_measured
    doc = read_json(path)
    if not isinstance(doc, dict) or "records" not in doc or "strategy" not in doc:
        raise MegasimError(f"{path}: not a calibration raw trace (a JSON object with the run, its strategy "
                           "included, and \"records\": [...], one per block)")
    _, launches = read_measured(path)
    check_run({"split": "train", **doc}, str(path))
    check_against(launches["fused"], graph_of(doc), num_sms, str(path), "fused")
    return doc


def check_sample(meta, launches: dict, path) -> None:
    """A trace sample's cases: each a run the simulator can rebuild (`measured_trace.RunMeta`, a mapping that
    exists), each launch's fields equally long, the task types, SMs and tasks in range and the ready and end
    times, stored as differences, not negative."""
    from megasim.app.measured_trace import RunMeta
    if not isinstance(meta, dict):
        raise MegasimError(f"{path}: not a packed trace sample: its __meta__ is not an object of cases")
    for case, about in meta.items():
        where = f"{path}: case {case!r}"
        parse(RunMeta, about, where)
        if "strategy" not in about:
            raise MegasimError(f"{where}: strategy is missing")
        check_run({"split": "train", **about}, where)
        for launch, rec in launches[case].items():
            where = f"{path}: case {case!r}, launch {launch!r}"
            if len({len(v) for v in rec.values()}) != 1 or not len(rec["task"]):
                raise MegasimError(f"{where}: its fields should be equally long and not empty")
            bad = [f for f, lo, hi in (("op", 0, 3), ("sm", 0, 100_000), ("task", 0, 2**31 - 1),
                                       ("ready_us", 0, None), ("end_us", 0, None))
                   if rec[f].min() < lo or (hi is not None and rec[f].max() > hi)]
            if bad:
                raise MegasimError(f"{where}: {bad[0]} out of range")


@dataclass(kw_only=True)
class SampleTime:
    """A case's untraced time, measured in the same device call as its trace."""
    __pydantic_config__ = {"extra": "allow"}
    case: Annotated[str, Str(min_length=1)]
    fused_untraced_us: Micros


def load_sample_times(path) -> dict[str, float]:
    """{case: untraced us} of a `<gpu>_trace_sample_summary.json`."""
    doc = read_json(path)
    parse(Annotated[list[SampleTime], Items(min_length=1)], doc, str(path))
    return {r["case"]: r["fused_untraced_us"] for r in doc}


# --- <gpu>_runs.json's companion: what `validate` needs of the runs ------------------------------------------

def check_heldout(runs: list[dict], path) -> None:
    """`validate` states the held-out error: runs without a held-out one would make it nan%."""
    if not any(r["split"] == "heldout" for r in runs):
        raise MegasimError(f"{path}: no run has split \"heldout\"; validate reports the error on runs the fit "
                           "never saw, so it needs at least one")


__all__ = ["COMMITTED_RAW", "OUT", "CorpusLine", "Micro", "calibrate_defaults", "check_raw",
           "check_heldout", "check_sample", "corpus_runs", "present", "fitted_note", "load_corpus", "load_micro",
           "load_raw_trace", "load_sample_times", "raw_paths"]
