"""A schedule per convolution shape: from mapping files, the disk cache, or a simulator search.

A schedule is a whole build of the decision space for one shape
(`megasim.contract.build`: fused or non-fused, the Winograd variant, the
scheduling mode, the GEMM body, the partition) with its mapping (strategy and
options, or a mapping file's order), or torch's own convolution where that is
faster. `Schedules` says where one comes from, first match wins:

1. `mapping_dir`: schema-1 mapping files (`megasim search --precision fp32`
   writes them as best.json; `search --network` one folder per layer, also
   read) whose layer has the shape; the file decides everything;
2. the cache, `<cache_dir>/<gpu>/<N>x<C>x<H>x<W>x<K>.json`, if it was made
   for this kernel build and its variant is one of `variants`;
3. a simulator search (`megasim.app.search`, TPE over the whole decision
   space at the layer's own partition, `search_budget` evaluations, the
   paper's default point first), written to the cache. With `search_budget=0`,
   the GPU's partition table and the paper's default mapping, fused F(4x4),
   static, generic GEMM body.

Never slower than torch: with `backend="auto"` (the default), torch's own
convolution of the shape is measured once on the device (cuDNN autotuned,
TF32 off, its faster memory format: `gpu.baselines`) and cached with the
schedule, and the layer runs torch's convolution where that measurement is
below the simulator's prediction of the chosen build, as `cudnn.benchmark`
chooses among its own algorithms. `backend="megasim"` or `"torch"` forces a
side.

A cached schedule made for another kernel build is stale: the partition it
chose may not build, and the calibrated model it was searched on described
other kernels. It is searched again, with a warning that says so. F(6x6) is
left out of the default `variants`: it rounds about twenty times worse than
F(4x4) (docs/gpu.md), too far for a float32 drop-in.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from megasim.contract.errors import MegasimError
from megasim.io.writing import write_then_rename
from megasim.contract.problem import Layer, Partition

SCHEMA = 1
DEFAULT_BUDGET = 16
BACKENDS = ("auto", "megasim", "torch")


class NoLegalPoint(MegasimError):
    """The search space holds no point the kernels can build for this shape (e.g. every GEMM block is
    over twice a small K); the partition table's default is used instead."""


class ScheduleWarning(UserWarning):
    """A cached schedule was made for other kernels and is being searched again."""


class ProfileWarning(UserWarning):
    """The calibrated profile a search runs on predicts part of the decision space not at all, or is stale."""


_warned_profiles: set = set()


def _warn_profile(gpu: str, note: str) -> None:
    """The profile's warnings (`CalibrationProfile.warnings`, carried in the model note), once per GPU a process."""
    lines = note.split("; WARNING: ")[1:]
    if lines and gpu not in _warned_profiles:
        _warned_profiles.add(gpu)
        warnings.warn(f"megasim.torch searches schedules on the {gpu} profile: " + "; ".join(lines), ProfileWarning,
                      stacklevel=3)


def checked_shape(shape) -> tuple:
    """(N, C, H, W, K) as five positive ints; anything else is one MegasimError saying what was given."""
    try:
        out = tuple(int(v) for v in shape)
        ok = len(out) == 5 and all(v > 0 for v in out) and all(float(v) == int(v) for v in shape)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise MegasimError(f"a convolution shape is (N, C, H, W, K), five positive integers; got {shape!r}")
    return out


def shape_name(shape) -> str:
    return "x".join(str(v) for v in checked_shape(shape))


def default_cache_dir() -> Path:
    """$MEGASIM_TORCH_CACHE, else ~/.cache/megasim/torch."""
    env = os.environ.get("MEGASIM_TORCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "megasim" / "torch"


@dataclass(frozen=True, eq=False)
class Schedule:
    """One shape's schedule and where it came from."""

    shape: tuple  # (N, C, H, W, K)
    variant: int
    partition: Partition
    mode: str
    strategy: str
    params: dict = field(default_factory=dict)
    gpu: str = ""
    kernel_build: str = ""
    source: str = ""
    predicted_us: float | None = None
    mapping_file: str | None = None
    launch: str = "fused"
    gemm: str = "generic"
    torch_us: float | None = None  # torch's convolution of this shape, measured once on the device
    backend: str = "megasim"       # what runs: "megasim" (this build) or "torch"
    reason: str = ""               # why that side

    @property
    def build(self):
        from megasim.contract.build import Build
        return Build(self.launch, self.variant, self.mode, self.gemm, self.partition)

    @property
    def layer(self) -> Layer:
        n, c, h, w, k = self.shape
        return Layer(n, c, h, w, k, name=f"conv {shape_name(self.shape)}")

    def graph(self):
        from megasim.contract.graph import build_graph
        from megasim.contract.problem import WinogradVariant
        return build_graph(self.layer, WinogradVariant(self.variant), self.partition)

    def mapping(self, graph):
        from megasim.contract.mapping import make, validate
        from megasim.contract.mapping.io import load_mapping
        if self.mapping_file:
            return load_mapping(self.mapping_file, graph)
        mapping = make(graph, self.strategy, **self.params)
        validate(graph, mapping)
        return mapping

    def to_doc(self) -> dict:
        return {"schema": SCHEMA, **asdict(self), "shape": list(self.shape), "partition": self.partition.to_dict()}

    @staticmethod
    def from_doc(doc: dict, origin: str = "schedule") -> Schedule:
        try:
            if doc.get("schema") != SCHEMA:
                raise KeyError("schema")
            fields = {k: doc[k] for k in ("variant", "mode", "strategy", "params", "gpu", "kernel_build", "source",
                                          "predicted_us", "mapping_file")}
            fields.update({k: doc[k] for k in ("launch", "gemm", "torch_us", "backend", "reason") if k in doc})
            return Schedule(shape=tuple(int(v) for v in doc["shape"]), partition=Partition.from_dict(doc["partition"]),
                            **fields)
        except (KeyError, TypeError, ValueError) as exc:
            raise MegasimError(f"{origin}: not a schema-{SCHEMA} schedule ({exc})") from None

    def describe(self) -> str:
        guess = f", predicted {self.predicted_us:.1f} us" if self.predicted_us else ""
        ours = f"{self.build.label} {self.strategy} {self.params}{guess} ({self.source})"
        if self.backend == "torch":
            return f"torch's convolution ({self.reason}); megasim's best: {ours}"
        return ours + (f"; {self.reason}" if self.reason else "")


def default_schedule(shape, gpu: str) -> Schedule:
    """The partition table's partition for this GPU, F(4x4), static, the paper's default mapping."""
    from megasim.app.catalog import load_gpu, partition_for
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import KernelConfig, config_header, kernel_build_hash
    lay = Schedule(shape, 4, Partition(), "static", "paper").layer
    part = partition_for(lay, load_gpu(gpu).name)
    try:
        config_header(KernelConfig(lay, WinogradVariant(4), part))
    except MegasimError as exc:
        raise MegasimError(f"no schedule for {shape_name(shape)}: the partition table's default does not build "
                           f"({exc})") from None
    return Schedule(tuple(shape), 4, part, "static", "paper", {}, gpu, kernel_build_hash(),
                    f"partition table of {gpu}, paper defaults")


def search_schedule(shape, gpu_name: str, budget: int, variants=(2, 4), jobs: int = 1, seed: int = 0) -> Schedule:
    """The simulator's best of `budget` TPE evaluations over the whole decision space (launch, variant, mode,
    GEMM body, mapping options) at the layer's own partition."""
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.catalog import partition_for
    from megasim.app.search import outputs
    from megasim.app.search.objective import Problem
    from megasim.app.search.runner import SearchConfig, run_search
    from megasim.app.search.space import build_space, legal_points
    from megasim.gpu.backend import kernel_build_hash
    gpu, note, intervals = simulation_model(gpu_name)
    _warn_profile(gpu.name, note)
    layer = Schedule(shape, 4, Partition(), "static", "paper").layer
    space = build_space("paper", partition_for(layer, gpu.name), {"variant": tuple(variants)}, layer)
    problem = Problem.at_default(layer, gpu, "paper", space, intervals)
    legal, example = legal_points(space, layer, gpu, limit=0)
    if not legal:
        raise NoLegalPoint(example)
    config = SearchConfig(method="tpe", budget=budget, jobs=jobs, seed=seed, progress=False, nonfused=False)
    result = run_search(problem, space, config)
    ok = [r for r in outputs.rows(result, space) if r["status"] == "ok"]
    if not ok:
        raise NoLegalPoint(f"none of {len(result.trials)} evaluations was legal")
    best = ok[0]
    chosen, part, opts = problem.at(space, {p.name: best[p.name] for p in space.params})
    return Schedule(tuple(shape), chosen.variant.m, part, chosen.mode, "paper", opts, gpu.name, kernel_build_hash(),
                    f"search: {len(result.trials)} TPE evaluations on {note.removeprefix('model: ')}",
                    float(best["time_us"]), launch=chosen.launch, gemm=chosen.gemm)


def same_timed_build(made_on: str, now: str, gpu: str) -> bool:
    """Whether a schedule made on kernel build `made_on` holds for build `now`: the same build, or two builds
    the GPU's committed profile counts as its own (fitted or re-validated: the timed code did not change)."""
    if made_on == now:
        return True
    from megasim.app.calibrate.profile import load_profile, profile_path
    path = profile_path(gpu)
    if not path.exists():
        return False
    prov = load_profile(path).provenance
    builds = {prov.get("kernel_build"), *prov.get("revalidated_builds", [])}
    return made_on in builds and now in builds


def _mapping_files(folder: Path) -> dict[tuple, Path]:
    """Shape -> mapping file in `folder` or one folder down (`search --out` writes DIR/best.json, `search
    --network --out DIR` one DIR/<layer>/best.json per distinct layer; the first by name wins); files that are
    not mapping files are skipped."""
    from megasim.contract.mapping.io import read_mapping_file
    found = {}
    for path in sorted(folder.glob("*.json")) + sorted(folder.glob("*/best.json")):
        try:
            doc = read_mapping_file(path)
            shape = tuple(int(doc["layer"][f]) for f in "nchwk")
        except (MegasimError, KeyError, TypeError, ValueError):
            continue
        found.setdefault(shape, path)
    return found


def from_mapping_file(path: Path, gpu: str) -> Schedule:
    """A mapping file's schedule: the whole build it names."""
    from megasim.contract.mapping.io import build_of, mode_of, problem_of, read_mapping_file
    from megasim.gpu.backend import kernel_build_hash
    doc = read_mapping_file(path)
    build = build_of(doc, str(path))
    if build.precision != "fp32":
        raise MegasimError(f"{path}: megasim.torch runs FP32 builds; this mapping file names precision "
                           f"{build.precision!r}: search for it with --precision fp32")
    layer, variant, part = problem_of(doc, str(path))
    guess = (doc.get("search") or {}).get("predicted_us")
    return Schedule((layer.n, layer.c, layer.h, layer.w, layer.k), variant.m, part, mode_of(doc, str(path)),
                    str(doc.get("strategy", "file")), doc.get("params") or {}, gpu, kernel_build_hash(),
                    f"mapping file {path}", guess, str(path), launch=build.launch, gemm=build.gemm)


@dataclass(frozen=True)
class Schedules:
    """Where schedules come from (module docstring); one object serves any number of layers."""

    mapping_dir: str | None = None
    cache_dir: str | None = None
    search_budget: int = DEFAULT_BUDGET
    variants: tuple = (2, 4)
    jobs: int = 1
    gpu: str | None = None  # simulate this GPU; default: the one the tensors are on
    seed: int = 0
    backend: str = "auto"   # "auto": the faster of megasim's build and torch's convolution; "megasim"; "torch"

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise MegasimError(f"unknown backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        if self.mapping_dir is not None and not Path(self.mapping_dir).is_dir():
            raise MegasimError(f"Schedules(mapping_dir={self.mapping_dir!r}): not a folder (`megasim search --out "
                               "DIR --precision fp32`, or `search --network`, writes one)")

    def key(self) -> str:
        """A short stable name (the custom op carries it as a string)."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()[:12]

    def cache_path(self, shape, gpu: str) -> Path:
        return Path(self.cache_dir or default_cache_dir()) / gpu / f"{shape_name(shape)}.json"

    def lookup(self, shape, gpu: str) -> Schedule | None:
        """A schedule from the mapping files or the cache, without searching; None if neither has one."""
        shape = checked_shape(shape)
        if self.mapping_dir:
            path = _mapping_files(Path(self.mapping_dir)).get(shape)
            if path is not None:
                return from_mapping_file(path, gpu)
        return self.cached(shape, gpu)

    def cached(self, shape, gpu: str) -> Schedule | None:
        from megasim.io.files import read_json
        from megasim.gpu.backend import kernel_build_hash
        path = self.cache_path(shape, gpu)
        if not path.exists():
            return None
        schedule = Schedule.from_doc(read_json(path), str(path))
        now = kernel_build_hash()
        if not same_timed_build(schedule.kernel_build, now, gpu):
            warnings.warn(f"megasim.torch: the cached schedule {path} was made for kernel build "
                          f"{schedule.kernel_build}, these kernels are build {now}: it is stale, searching again",
                          ScheduleWarning, stacklevel=3)
            return None
        if schedule.variant not in self.variants:
            return None
        return schedule

    def store(self, schedule: Schedule) -> Path:
        path = self.cache_path(schedule.shape, schedule.gpu)
        with write_then_rename(path) as tmp:
            tmp.write_text(json.dumps(schedule.to_doc(), indent=1))
        return path

    def make(self, shape, gpu: str) -> Schedule:
        """A new schedule for `shape`: the search (stored in the cache), or the table's default."""
        shape = checked_shape(shape)
        if self.search_budget <= 0:
            return default_schedule(shape, gpu)
        try:
            schedule = search_schedule(shape, gpu, self.search_budget, self.variants, self.jobs, self.seed)
        except NoLegalPoint as exc:
            fallback = default_schedule(shape, gpu)
            schedule = replace(fallback, source=f"{fallback.source}: the search space had no legal point ({exc})")
        self.store(schedule)
        return schedule

    def resolve(self, shape, gpu: str) -> Schedule:
        return self.lookup(shape, gpu) or self.make(shape, gpu)

    def decide(self, schedule: Schedule, measure_torch=None) -> Schedule:
        """`schedule` with the side that runs (`backend`) and why. In "auto", torch's convolution of the
        shape is measured once (`measure_torch(shape)` -> us, on the device) and cached with the schedule."""
        if self.backend != "auto":
            return replace(schedule, backend=self.backend, reason=f"forced: backend={self.backend!r}")
        if schedule.torch_us is None and measure_torch is not None:
            schedule = replace(schedule, torch_us=float(measure_torch(schedule.shape)))
            if not schedule.mapping_file:
                self.store(schedule)
        ours, theirs = schedule.predicted_us, schedule.torch_us
        if theirs is None or ours is None:
            why = "no torch measurement" if theirs is None else "no prediction of the build"
            return replace(schedule, backend="megasim", reason=f"{why}: runs the build")
        if theirs < ours:
            return replace(schedule, backend="torch",
                           reason=f"torch measured {theirs:.1f} us, below the build's predicted {ours:.1f} us")
        return replace(schedule, backend="megasim",
                       reason=f"predicted {ours:.1f} us, below torch's measured {theirs:.1f} us")


__all__ = ["Schedule", "Schedules", "ScheduleWarning", "NoLegalPoint", "default_schedule", "search_schedule", "shape_name",
           "default_cache_dir"]
