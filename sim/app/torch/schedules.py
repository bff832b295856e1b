"""A schedule per convolution shape: from mapping files, the disk cache, or a simulator search.

A schedule is what the megakernel needs beyond the shape: the Winograd
variant, the partition, the scheduling mode and the mapping (strategy and
options, or a mapping file's order). `Schedules` says where one comes from,
first match wins:

1. `mapping_dir`: schema-1 mapping files (`megasim search` writes them as
   best.json) whose layer has the shape; the file decides everything;
2. the cache, `<cache_dir>/<gpu>/<N>x<C>x<H>x<W>x<K>.json`, if it was made
   for this kernel build and its variant is one of `variants`;
3. a simulator search (`megasim.app.search`, TPE over variant, mode,
   mapping options and partition, `search_budget` evaluations, the paper's
   default point first), written to the cache. With `search_budget=0`, the
   GPU's partition table and the paper's default mapping, F(4x4), static.

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
from megasim.contract.problem import Layer, Partition, WinogradVariant

SCHEMA = 1
DEFAULT_BUDGET = 16


class NoLegalPoint(MegasimError):
    """The search space holds no point the kernels can build for this shape (e.g. every GEMM block is
    over twice a small K); the partition table's default is used instead."""


class ScheduleWarning(UserWarning):
    """A cached schedule was made for other kernels and is being searched again."""


def shape_name(shape) -> str:
    return "x".join(str(int(v)) for v in shape)


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
            return Schedule(shape=tuple(int(v) for v in doc["shape"]), partition=Partition.from_dict(doc["partition"]),
                            **fields)
        except (KeyError, TypeError, ValueError) as exc:
            raise MegasimError(f"{origin}: not a schema-{SCHEMA} schedule ({exc})") from None

    def describe(self) -> str:
        guess = f", predicted {self.predicted_us:.1f} us" if self.predicted_us else ""
        return f"F{self.variant} {self.mode} {self.strategy} {self.params}{guess} ({self.source})"


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
    """The simulator's best of `budget` TPE evaluations (variant, mode, mapping options, partition)."""
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import partition_for
    from megasim.app.search import outputs
    from megasim.app.search.objective import Problem
    from megasim.app.search.runner import SearchConfig, run_search
    from megasim.app.search.space import build_space, legal_points
    from megasim.gpu.backend import kernel_build_hash
    gpu, note = gpu_for_simulation(gpu_name)
    layer = Schedule(shape, 4, Partition(), "static", "paper").layer
    space = build_space("paper", partition_for(layer, gpu.name),
                        {"variant": tuple(variants), "launch": ("fused",), "gemm": ("generic",)}, layer)
    reference = space.setting(space.default_point())
    problem = Problem(layer, WinogradVariant(reference.variant), gpu, "paper").with_build(reference)
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
                    float(best["time_us"]))


def _mapping_files(folder: Path) -> dict[tuple, Path]:
    """Shape -> mapping file in `folder` (the first by name wins); files that are not mapping files are skipped."""
    from megasim.contract.mapping.io import read_mapping_file
    found = {}
    for path in sorted(folder.glob("*.json")):
        try:
            doc = read_mapping_file(path)
            shape = tuple(int(doc["layer"][f]) for f in "nchwk")
        except (MegasimError, KeyError, TypeError, ValueError):
            continue
        found.setdefault(shape, path)
    return found


def from_mapping_file(path: Path, gpu: str) -> Schedule:
    """A mapping file's schedule; refused where it names a build this op cannot run (it launches the fused
    megakernel with the generic GEMM body)."""
    from megasim.contract.mapping.io import build_of, mode_of, problem_of, read_mapping_file
    from megasim.gpu.backend import kernel_build_hash
    doc = read_mapping_file(path)
    build = build_of(doc, str(path))
    if (build.launch, build.gemm) != ("fused", "generic"):
        raise MegasimError(f"{path} names a {build.label} build; megasim.torch runs the fused megakernel with the "
                           "generic GEMM body only: search with --launch fused --gemm generic for it")
    layer, variant, part = problem_of(doc, str(path))
    guess = (doc.get("search") or {}).get("predicted_us")
    return Schedule((layer.n, layer.c, layer.h, layer.w, layer.k), variant.m, part, mode_of(doc, str(path)),
                    str(doc.get("strategy", "file")), doc.get("params") or {}, gpu, kernel_build_hash(),
                    f"mapping file {path}", guess, str(path))


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

    def key(self) -> str:
        """A short stable name (the custom op carries it as a string)."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()[:12]

    def cache_path(self, shape, gpu: str) -> Path:
        return Path(self.cache_dir or default_cache_dir()) / gpu / f"{shape_name(shape)}.json"

    def lookup(self, shape, gpu: str) -> Schedule | None:
        """A schedule from the mapping files or the cache, without searching; None if neither has one."""
        shape = tuple(int(v) for v in shape)
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
        if schedule.kernel_build != now:
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
        shape = tuple(int(v) for v in shape)
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


__all__ = ["Schedule", "Schedules", "ScheduleWarning", "NoLegalPoint", "default_schedule", "search_schedule", "shape_name",
           "default_cache_dir"]
