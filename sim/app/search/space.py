"""The search space: a finite, ordered list of values per parameter, and what makes a point legal.

A parameter is an axis of the decision space (`megasim.contract.build.AXES`:
the launch, fused or non-fused; the Winograd variant; the megakernel's
scheduling mode; the GEMM body; its precision), a "problem" parameter that decides which
graph is built and how it runs; an option of the mapping strategy (`dig`,
`dgo`, `m` for `paper`; `seed` for `random_topo`), whose values the strategy
declares (`megasim.contract.options`); or a `Partition` field. Parameters with
one value are fixed and never shown to the sampler. Every sampler draws from
the same lists, so grid, random and TPE search one space and a heatmap cell
is always a declared value.

By default the partition is not searched: every build runs on the layer's own
partition (its row of the GPU's table, widened to 128 output channels per
task for the warp body, as `bench` runs it). That is where the model was
calibrated (every calibration run used it); searched partitions took the
model into corners where its pick was predicted 14% too fast on average
(H200, 2026-11-27). `--space FIELD=...` opens a field, and a partition field
a space does not open comes from the point's GEMM body's own partition.

Legality is checked from arithmetic alone (no graph is built). A non-fused
build has no scheduling mode and no mapping: every sample of it stands for
its one canonical point (`Space.canonical`: static, the strategy's default
options), so the sampler reaches it as often as any fused build. The partition
must be constructible, its megakernel block must fit on an SM of the chosen
GPU, and the CUDA kernels must be able to build it (the GEMM task tiles onto
the threads, its shared-memory ring fits the 48 KiB static limit; the rules
are asked of `gpu.backend.config_header`, not copied). Points that would
only pad are rejected too: a task group of twice the layer's tiles or more, a
GEMM block of twice K or more (except at the layer's own value, which is
never refused for padding); more Winograd points per GEMM
task than alpha^2; and, for a fused build, M above the number of task groups
(a duplicate of M = N_G). A non-fused build has no mapping to check.
A point whose graph `megasim.contract.size` would refuse (past the memory
available or the simulation-time limit) is rejected with its estimate, so a
space of nothing but such points is refused before a worker starts.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, fields
from functools import lru_cache

from megasim.contract.build import AXES, Build
from megasim.contract.resources import GEMM_BODIES, warp_partition
from megasim.contract.errors import MegasimError
from megasim.contract.graph import Geometry
from megasim.contract.mapping import MAPPINGS
from megasim.contract.options import declared, search_values
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.ranges import DataRanges
from megasim.contract.resources import Flavor, blocks_per_sm, megakernel_resources
from megasim.contract.size import check_size

PARTITION_FIELDS = tuple(f.name for f in fields(Partition))
# Every axis of the decision space is searched unless pinned, except the precision: FP32 unless a space opens it
# (`search.command.precision_space`, where the model has a `gemm_precision` law). The paper's point is a fused
# F(4x4), static build with the generic GEMM body (`Build()`).
PROBLEM_VALUES = {**AXES, "precision": ("fp32",)}
PROBLEM_DEFAULTS = {axis: getattr(Build(), axis) for axis in AXES}
NAMED_VALUES = ("launch", "mode", "gemm", "precision")  # parameters whose values are names, not integers


@dataclass(frozen=True)
class Param:
    name: str
    values: tuple
    kind: str  # "problem", "mapping" or "partition"


@dataclass(frozen=True)
class Space:
    """Declared values per parameter, the strategy they feed and the partition they start from."""

    strategy: str
    params: tuple[Param, ...]
    base_partition: Partition
    default_mapping: tuple  # ((name, value), ...): the strategy's own defaults
    body_partitions: tuple = ()  # ((gemm body, Partition), ...): each body's own, where it differs from the base

    @property
    def searched(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if len(p.values) > 1)

    @property
    def size(self) -> int:
        n = 1
        for p in self.params:
            n *= len(p.values)
        return n

    def grid(self) -> dict:
        """The searched parameters' value lists (what Optuna's GridSampler takes)."""
        return {p.name: list(p.values) for p in self.searched}

    def complete(self, point: dict) -> dict:
        """A sampled point plus the fixed parameters."""
        return {**{p.name: p.values[0] for p in self.params if len(p.values) == 1}, **point}

    def split(self, point: dict) -> tuple[Partition, dict]:
        """(partition, mapping options) of a point; may raise MegasimError. A partition field the space
        does not search comes from the point's GEMM body's own partition."""
        point = self.complete(self.canonical(point))
        body = dict(self.body_partitions).get(point.get("gemm"))
        searched = {p.name for p in self.searched}
        part = {f: point[f] if f in searched or body is None else getattr(body, f) for f in PARTITION_FIELDS}
        return Partition(**part), self.options(point)

    def options(self, point: dict) -> dict:
        """The mapping options of a point."""
        return {k: v for k, v in self.complete(point).items() if k not in PARTITION_FIELDS and k not in PROBLEM_VALUES}

    def setting(self, point: dict) -> Build:
        """The build of a point: launch, variant, scheduling mode and GEMM body (its partition: `split`)."""
        point = self.complete(self.canonical(point))
        return Build(**{axis: point[axis] for axis in PROBLEM_VALUES})

    def canonical(self, point: dict) -> dict:
        """The point that stands for `point`'s build: a non-fused build has no scheduling mode and no
        mapping, so its mode and mapping options are the defaults whatever was sampled. Points with one
        canonical point are one evaluation (the search caches by it), so every sample of a non-fused
        build counts instead of being thrown away."""
        if {**self.complete({}), **point}.get("launch") != "nonfused":
            return point
        fixed = {"mode": PROBLEM_DEFAULTS["mode"], **dict(self.default_mapping)}
        return {k: fixed.get(k, v) for k, v in point.items()}

    def default_point(self) -> dict:
        """The paper's defaults on the base partition, as searched parameters.

        Its variant and mode are F(4x4) and static where the space holds them, else the space's first.
        """
        values = {p.name: p.values for p in self.params}
        problem = {k: v if v in values[k] else values[k][0] for k, v in PROBLEM_DEFAULTS.items()}
        d = {**problem, **self.base_partition.to_dict(), **dict(self.default_mapping)}
        return {p.name: d[p.name] for p in self.searched}

    def build_points(self) -> list[dict]:
        """Every build of the space at the default mapping and the base partitions, once each (canonical),
        the default point first, then the non-fused builds: the discrete builds a search starts from, so its
        pick is never predicted slower than the best of them, and a budget smaller than their number still
        sees every non-fused build (a few, each as cheap as one fused evaluation's twin). A combination that is no
        build (3xTF32 on the generic body) is left out: its evaluation would only be rejected."""
        import itertools
        start = self.default_point()
        axes = [p for p in self.searched if p.kind == "problem"]
        out = [start]
        for combo in itertools.product(*(p.values for p in axes)):
            point = self.canonical({**start, **dict(zip((p.name for p in axes), combo))})
            if point not in out and self.is_build(point):
                out.append(point)
        return out[:1] + sorted(out[1:], key=lambda point: point.get("launch") != "nonfused")

    def is_build(self, point: dict) -> bool:
        try:
            self.setting(point)
        except MegasimError:
            return False
        return True

    def contains(self, point: dict) -> bool:
        return all(point.get(p.name) in p.values for p in self.searched)

    def key(self) -> str:
        """A short hash of everything that decides which points exist."""
        doc = {"strategy": self.strategy, "base": self.base_partition.to_dict(),
               "params": {p.name: list(p.values) for p in self.params},
               "bodies": {g: p.to_dict() for g, p in self.body_partitions}}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:10]

    def describe(self) -> dict:
        return {"strategy": self.strategy, "base_partition": self.base_partition.to_dict(),
                "body_partitions": {g: p.to_dict() for g, p in self.body_partitions},
                "params": {p.name: list(p.values) for p in self.params}, "size": self.size, "key": self.key()}


def parse_overrides(items: list[str] | None) -> dict[str, tuple]:
    """`--space name=v1,v2,...` (repeatable) -> {name: values}."""
    out: dict[str, tuple] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise MegasimError(f"--space wants name=v1,v2,..., got {item!r}")
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not values:
            raise MegasimError(f"--space {name}: empty list of values")
        if name in NAMED_VALUES:  # build_space checks them
            parsed = tuple(values)
        else:
            try:
                parsed = tuple(int(v) for v in values)
            except ValueError:
                raise MegasimError(f"--space {name}: values must be integers, got {text!r}") from None
        if len(set(parsed)) != len(parsed):
            raise MegasimError(f"--space {name}: repeated values in {text!r}")
        if name in out:
            raise MegasimError(f"--space {name} given twice ({','.join(map(str, out[name]))}, then {text}); "
                               "give it once")
        out[name] = parsed
    return out


MAX_VALUES = 256  # values of one searched parameter: more is a typo or a sweep, not a search


def _check_values(strategy: str, base: Partition, overrides: dict) -> None:
    """Every `--space` value is one the strategy or the partition takes, checked before the search: a non-fused
    build ignores the mapping's options, so an illegal value would otherwise pass silently on those points."""
    for name, values in overrides.items():
        if len(values) > MAX_VALUES:
            raise MegasimError(f"--space {name}: {len(values)} values; a search takes at most {MAX_VALUES} per "
                               "parameter")
        for value in values:
            try:
                if name in PARTITION_FIELDS:
                    Partition(**{**base.to_dict(), name: value})
                elif name not in PROBLEM_VALUES:
                    MAPPINGS.get(strategy).make_options({name: value})
            except MegasimError as exc:
                raise MegasimError(f"--space {name}={value}: {exc}") from None


def build_space(strategy: str, base_partition: Partition, overrides: dict[str, tuple] | None = None,
                layer: Layer | None = None) -> Space:
    """The default space for a strategy, with `overrides` replacing whole value lists. With `layer`, the warp
    body's points run on its own partition (`warp_partition`) unless `--space` names gemm_k_per_task."""
    options = MAPPINGS.get(strategy).options
    defaults = {o.name: o.default for o in declared(options)}
    searched = search_values(options)
    known = list(PROBLEM_VALUES) + list(defaults) + list(PARTITION_FIELDS)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise MegasimError(f"unknown search parameter(s) {unknown} for strategy {strategy!r}; "
                           f"known: {', '.join(known)}")
    for axis in PROBLEM_VALUES:
        for value in overrides.get(axis, ()):
            Build(**{axis: value, **({"gemm": "warp"} if axis == "precision" else {})})
    _check_values(strategy, base_partition, overrides)
    base = base_partition.to_dict()
    params = [Param(name, tuple(overrides.get(name, values)), "problem") for name, values in PROBLEM_VALUES.items()]
    for name in known[len(PROBLEM_VALUES):]:
        kind = "partition" if name in PARTITION_FIELDS else "mapping"
        start = defaults[name] if kind == "mapping" else base[name]
        if name in overrides:
            values = tuple(overrides[name])
        else:
            values = tuple(sorted(set(searched.get(name, ())) | {start}))
        params.append(Param(name, values, kind))
    bodies = ()
    if layer is not None and "gemm_k_per_task" not in overrides:
        pinned = {f: v[0] for f, v in overrides.items() if f in PARTITION_FIELDS and len(v) == 1}
        wide = warp_partition(layer, Partition(**{**base, **pinned}))
        bodies = tuple((g, wide) for g in GEMM_BODIES if g == "warp")
    return Space(strategy, tuple(params), base_partition, tuple(defaults.items()), bodies)


@lru_cache(maxsize=4096)
def _kernel_reason(layer: Layer, variant: WinogradVariant, part: Partition, gemm: str,
                   precision: str = "fp32") -> str | None:
    """Why the CUDA kernels refuse to build this partition, or None.

    Asked of `gpu.backend.config_header`, the function that writes a build's
    configuration and refuses what the kernels cannot run (GEMM tiling onto
    the threads, the 48 KiB static shared-memory ring), so the rules are not
    copied here. Pure Python; no CuPy needed.
    """
    from megasim.gpu.backend import KernelConfig, config_header
    try:
        config_header(KernelConfig(layer=layer, variant=variant, partition=part, gemm=gemm, precision=precision))
    except MegasimError as exc:
        return "kernels cannot build it: " + re.sub(r"^partition Partition\(.*?\): ", "", str(exc))
    return None


def _size_reason(layer: Layer, variant: WinogradVariant, part: Partition, num_tasks: int) -> str | None:
    try:
        check_size(DataRanges.of(layer, variant, part), num_tasks)
    except MegasimError as exc:
        return str(exc)
    return None


def reject_reason(space: Space, point: dict, layer: Layer, gpu, sizes: dict | None = None) -> str | None:
    """Why `point` (its build, partition and options) is illegal for this layer and GPU, or None.

    `sizes` keeps the size verdict of each (variant, partition) across calls, which many points share.
    """
    try:
        part, opts = space.split(point)
        build = space.setting(point)
    except MegasimError as exc:
        return str(exc)
    variant, fused = WinogradVariant(build.variant), build.launch == "fused"
    geo = Geometry.of(layer, variant, part)
    sizes = {} if sizes is None else sizes
    if (variant, part) not in sizes:
        sizes[variant, part] = _size_reason(layer, variant, part, geo.num_tasks)
    if sizes[variant, part]:
        return sizes[variant, part]
    own = dict(space.body_partitions).get(build.gemm, space.base_partition)
    if part.tiles_per_group != own.tiles_per_group and part.tiles_per_group >= 2 * geo.num_tiles:
        return f"tiles_per_group={part.tiles_per_group} is over twice the layer's {geo.num_tiles} tiles"
    if part.gemm_k_per_task != own.gemm_k_per_task and part.gemm_k_per_task >= 2 * layer.k:
        return f"gemm_k_per_task={part.gemm_k_per_task} is over twice K={layer.k}"
    if part.gemm_mats_per_task > variant.alpha ** 2:
        return f"gemm_mats_per_task={part.gemm_mats_per_task} exceeds the {variant.alpha ** 2} Winograd points"
    try:
        if fused:
            blocks_per_sm(gpu, megakernel_resources(part, flavor=Flavor.of(layer, variant, part, build.gemm,
                                                                          build.precision)))
    except MegasimError as exc:
        return f"megakernel block does not fit on {gpu.name}: {exc}"
    why = _kernel_reason(layer, variant, part, build.gemm, build.precision)
    if why:
        return why
    if not fused:
        return None
    if "m" in opts and opts["m"] > geo.n_g:
        return f"m={opts['m']} exceeds the N_G={geo.n_g} task groups"
    try:
        MAPPINGS.get(space.strategy).make_options(opts)
    except (MegasimError, TypeError) as exc:
        return str(exc)
    return None


def legal_points(space: Space, layer, gpu, limit: int = 100_000) -> tuple[int, str | None]:
    """(legal points, one rejection reason) by enumeration; stops at the first legal one past `limit`."""
    import itertools
    names = [p.name for p in space.searched]
    count, example, sizes = 0, None, {}
    for i, combo in enumerate(itertools.product(*(p.values for p in space.searched))):
        why = reject_reason(space, dict(zip(names, combo)), layer, gpu, sizes)
        if why is None:
            count += 1
            if i >= limit:
                break
        elif example is None:
            example = why
    return count, example
