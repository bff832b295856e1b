"""The search space: a finite, ordered list of values per parameter, and what makes a point legal.

A parameter is the Winograd variant (`variant`, the m of F(m x m, 3 x 3)) or
the megakernel's scheduling mode (`mode`), both "problem" parameters that
decide which graph is built and how it runs; an option of the mapping
strategy (`dig`, `dgo`, `m` for `paper`; `seed` for `random_topo`), whose
values the strategy declares (`megasim.contract.options`); or a `Partition`
field. Parameters with one value are fixed and never shown to the sampler.
Every sampler draws from the same lists, so grid, random and TPE search one
space and a heatmap cell is always a declared value.

Legality is checked from arithmetic alone (no graph is built): the partition
must be constructible, its megakernel block must fit on an SM of the chosen
GPU, and the CUDA kernels must be able to build it (the GEMM task tiles onto
the threads, its shared-memory ring fits the 48 KiB static limit; the rules
are asked of `gpu.backend.config_header`, not copied). Points that would
only pad are rejected too: a task group of twice the layer's tiles or more,
a GEMM block of twice K or more, more Winograd points per GEMM task than
alpha^2, and M above the number of task groups (a duplicate of M = N_G).
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
from megasim.contract.errors import MegasimError
from megasim.contract.graph import Geometry
from megasim.contract.mapping import MAPPINGS
from megasim.contract.options import declared, search_values
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.ranges import DataRanges
from megasim.contract.resources import Flavor, blocks_per_sm, megakernel_resources
from megasim.contract.scheduling import check_mode
from megasim.contract.size import check_size

PARTITION_FIELDS = tuple(f.name for f in fields(Partition))
# Every variant and mode is searched unless pinned; the paper's point is F(4x4), static.
# The decision space's axes as the contract declares them (`megasim.contract.build.AXES`). The GEMM body and the
# launch are not searched yet: the objective is the megakernel's time under the generic body.
PROBLEM_VALUES = {axis: AXES[axis] for axis in ("variant", "mode")}
PROBLEM_DEFAULTS = {"variant": Build().variant, "mode": Build().mode}

# Partition values searched unless --space says otherwise (strategy options declare their own);
# the base (default) value is always added.
PARTITION_VALUES = {
    "tiles_per_group": (32, 64, 128),
    "gemm_k_per_task": (32, 64, 128),
    "gemm_mats_per_task": (1, 2, 4),
    "threads": (128, 256),
}


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
        """(partition, mapping options) of a point; may raise MegasimError."""
        point = self.complete(point)
        part = {f: point.get(f, getattr(self.base_partition, f)) for f in PARTITION_FIELDS}
        return Partition(**part), {k: v for k, v in point.items()
                                   if k not in PARTITION_FIELDS and k not in PROBLEM_VALUES}

    def setting(self, point: dict) -> tuple[WinogradVariant, str]:
        """(variant, scheduling mode) of a point."""
        point = self.complete(point)
        return WinogradVariant(point["variant"]), point["mode"]

    def default_point(self) -> dict:
        """The paper's defaults on the base partition, as searched parameters.

        Its variant and mode are F(4x4) and static where the space holds them, else the space's first.
        """
        values = {p.name: p.values for p in self.params}
        problem = {k: v if v in values[k] else values[k][0] for k, v in PROBLEM_DEFAULTS.items()}
        d = {**problem, **self.base_partition.to_dict(), **dict(self.default_mapping)}
        return {p.name: d[p.name] for p in self.searched}

    def contains(self, point: dict) -> bool:
        return all(point.get(p.name) in p.values for p in self.searched)

    def key(self) -> str:
        """A short hash of everything that decides which points exist."""
        doc = {"strategy": self.strategy, "base": self.base_partition.to_dict(),
               "params": {p.name: list(p.values) for p in self.params}}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:10]

    def describe(self) -> dict:
        return {"strategy": self.strategy, "base_partition": self.base_partition.to_dict(),
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
        if name == "mode":  # the one parameter whose values are names; build_space checks them
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


def build_space(strategy: str, base_partition: Partition, overrides: dict[str, tuple] | None = None) -> Space:
    """The default space for a strategy, with `overrides` replacing whole value lists."""
    options = MAPPINGS.get(strategy).options
    defaults = {o.name: o.default for o in declared(options)}
    searched = {**PARTITION_VALUES, **search_values(options)}
    known = list(PROBLEM_VALUES) + list(defaults) + list(PARTITION_FIELDS)
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise MegasimError(f"unknown search parameter(s) {unknown} for strategy {strategy!r}; "
                           f"known: {', '.join(known)}")
    for m in overrides.get("variant", ()):
        WinogradVariant(m)
    for mode in overrides.get("mode", ()):
        check_mode(mode)
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
    return Space(strategy, tuple(params), base_partition, tuple(defaults.items()))


@lru_cache(maxsize=4096)
def _kernel_reason(layer: Layer, variant: WinogradVariant, part: Partition) -> str | None:
    """Why the CUDA kernels refuse to build this partition, or None.

    Asked of `gpu.backend.config_header`, the function that writes a build's
    configuration and refuses what the kernels cannot run (GEMM tiling onto
    the threads, the 48 KiB static shared-memory ring), so the rules are not
    copied here. Pure Python; no CuPy needed.
    """
    from megasim.gpu.backend import KernelConfig, config_header
    try:
        config_header(KernelConfig(layer=layer, variant=variant, partition=part))
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
    """Why `point` (its variant, partition and options) is illegal for this layer and GPU, or None.

    `sizes` keeps the size verdict of each (variant, partition) across calls, which many points share.
    """
    try:
        part, opts = space.split(point)
        variant, _ = space.setting(point)
    except MegasimError as exc:
        return str(exc)
    geo = Geometry.of(layer, variant, part)
    sizes = {} if sizes is None else sizes
    if (variant, part) not in sizes:
        sizes[variant, part] = _size_reason(layer, variant, part, geo.num_tasks)
    if sizes[variant, part]:
        return sizes[variant, part]
    if part.tiles_per_group >= 2 * geo.num_tiles:
        return f"tiles_per_group={part.tiles_per_group} is over twice the layer's {geo.num_tiles} tiles"
    if part.gemm_k_per_task >= 2 * layer.k:
        return f"gemm_k_per_task={part.gemm_k_per_task} is over twice K={layer.k}"
    if part.gemm_mats_per_task > variant.alpha ** 2:
        return f"gemm_mats_per_task={part.gemm_mats_per_task} exceeds the {variant.alpha ** 2} Winograd points"
    try:
        blocks_per_sm(gpu, megakernel_resources(part, flavor=Flavor.of(layer, variant, part)))
    except MegasimError as exc:
        return f"megakernel block does not fit on {gpu.name}: {exc}"
    why = _kernel_reason(layer, variant, part)
    if why:
        return why
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
