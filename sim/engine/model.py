"""The simulator's model of a GPU: the datasheet (`megasim.contract.spec.GPUSpec`) plus the engine's laws.

`GPUSpec` says what the hardware is; `Model` says how the engine turns work into time on it: the constants
every run uses (achieved bandwidth fractions, per-type FP32 efficiency, latencies a block adds, the usable
L2) and the laws the profile names (`megasim.engine.laws`), each with its own constants. `GPUModel` is the
two together, what the engine runs on: a `GPUSpec` (the GPU side and the resource plan read only that part)
with a `model`.

A `[model]` table, in a spec file (the uncalibrated model) or a calibration profile (the fitted one), holds
the constants by name, `laws = [...]` naming the laws, and one table per named law with its constants; a
law named without its table takes its declared defaults. `model_from_table` checks all of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from typing import get_type_hints

from megasim.contract.errors import MegasimError
from megasim.contract.problem import OP_NAMES, Op
from megasim.io.schema import float_in, int_in, parse
from megasim.contract.spec import Efficiency, GPUSpec, OpName, check_spec
from megasim.engine.laws import MODEL_LAWS, Law

PerType = dict[OpName, float_in(0.0, 1e8)]
# the fields these were before the laws were named, for a message that says where each went
MOVED = {"sm_sharing": "laws = [\"resident_sharing\"]", "issue_weight": "resident_sharing = { issue_weight = ... }",
         "gemm_bodies": "gemm_body_laws = { nonfused = ... }", "fused_gemm_bodies": "gemm_body_laws = { fused = ... }"}


def _f(help_: str, default):
    if isinstance(default, dict):
        return field(default_factory=dict, metadata={"help": help_})
    return field(default=default, metadata={"help": help_})


@dataclass(frozen=True, kw_only=True)
class Model:
    """The constants every run uses, and the laws (`megasim.engine.laws`) the profile names."""

    dram_efficiency: Efficiency = _f("achievable fraction of dram_gbps", 0.9)
    l2_efficiency: Efficiency = _f("achievable fraction of l2_gbps", 0.8)
    l2_usable_fraction: Efficiency = _f("fraction of L2 that holds reusable data (the rest: streaming, set "
                                        "conflicts)", 0.75)
    compute_efficiency: dict[OpName, Efficiency] = _f("achieved fraction of FP32 peak per task type; missing: 1", {})
    task_overhead_cycles: int_in(0, 10**8) = _f(
        "per megakernel block: ticket, task-map read, the counter atomic (non-fused blocks have none)", 0)
    wait_check_cycles: float_in(0.0, 1e8) = _f(
        "per dependency counter a megakernel block polls, what reading it costs even when it is already zero "
        "(an acquire load's round trip)", 0.0)
    dram_access_efficiency: dict[OpName, Efficiency] = _f(
        "per task type, the fraction of the streaming DRAM rate its access pattern reaches; its DRAM bytes cost "
        "1/this on the shared DRAM queue. Missing: 1", {})
    step_cycles: PerType = _f(
        "per task type, the latency of one serial step of a block (`megasim.contract.work.serial_steps`), on "
        "top of its DRAM, L2 and FP32 jobs (docs/decisions.md, 'A block's latency adds to its throughput'). "
        "Missing: 0", {})
    block_fixed_cycles: PerType = _f(
        "per task type, cycles every block spends on top of its jobs and its serial steps. Missing: 0", {})
    block_work_cv: float_in(0.0, 10.0) = _f(
        "coefficient of variation of a block's work (lognormal, mean 1): blocks of one type do not finish in "
        "lockstep", 0.0)
    laws: tuple[Law, ...] = ()

    def law(self, mechanism: str) -> Law | None:
        """The named law that answers `mechanism` (`megasim.engine.laws.MECHANISMS`), or None: the default."""
        for one in self.laws:
            if one.mechanism == mechanism:
                return one
        return None

    def named(self, name: str) -> Law | None:
        return next((one for one in self.laws if one.name == name), None)

    def efficiency(self, op: Op) -> float:
        """Achieved fraction of FP32 peak for a task type."""
        return float(self.compute_efficiency.get(OP_NAMES[op], 1.0))

    def for_gemm_body(self, body: str) -> Model:
        """This model with the GEMM's constants of `body` (the `gemm_constants` law) in place of the gemm entries."""
        bodies = self.law("gemm_constants")
        terms = bodies.gemm_terms(body) if bodies else {}
        if not terms:
            return self
        return replace(self, **{term: {**getattr(self, term), "gemm": value} for term, value in terms.items()})

    def for_megakernel(self) -> Model:
        """This model as the megakernel's blocks run: each law that has a fused form (`for_megakernel`: the
        `gemm_constants` law's fused table, the `tensor_core_gemm` law's fused efficiency) in its place."""
        laws = tuple(x.for_megakernel() if hasattr(x, "for_megakernel") else x for x in self.laws)
        return self if all(a is b for a, b in zip(laws, self.laws)) else replace(self, laws=laws)

    def with_laws(self, names, tables: dict, origin: str = "model", checked: bool = True) -> Model:
        """This model with the laws `names` (None: the ones it has), each with the constants its `tables` entry
        gives over those it had (or its declared defaults); `checked`: each in its range."""
        if names is None and not tables:
            return self
        names = [x.name for x in self.laws] if names is None else list(names)
        unnamed = sorted(set(tables) - set(names))
        if unnamed:
            raise MegasimError(f"{origin}: [model] has constants for {', '.join(unnamed)}, which its `laws` list "
                               f"does not name (laws = {names})")
        if len(set(names)) != len(names):
            raise MegasimError(f"{origin}: [model] laws names a law twice: {names}")
        laws = []
        for name in names:
            cls = MODEL_LAWS.get(name)
            table = tables.get(name, {})
            if not isinstance(table, dict):
                raise MegasimError(f"{origin}: [model] {name} must be a table of the law's constants, got {table!r}")
            old = self.named(name)
            given = {f.name: getattr(old, f.name) for f in fields(old)} if old else {}
            if checked:
                one = parse(cls, {**given, **table}, origin, (f"[model] {name}",))
                one.check(origin)
            else:
                one = cls(**{**given, **table})
            laws.append(one)
        mechanisms = [x.mechanism for x in laws]
        twice = sorted({m for m in mechanisms if mechanisms.count(m) > 1})
        if twice:
            raise MegasimError(f"{origin}: [model] laws {names} name two laws for {', '.join(twice)}; a mechanism "
                               "takes one")
        return replace(self, laws=tuple(laws))


@lru_cache(maxsize=None)
def _constant_types() -> dict:
    hints = get_type_hints(Model, include_extras=True)
    return {f.name: hints[f.name] for f in fields(Model) if f.name != "laws"}


def model_from_table(table: dict, origin: str, base: Model = Model(), checked: bool = True) -> Model:
    """A `[model]` table over `base`: its constants, `laws` and the laws' tables, each checked (a model built
    in code, `checked` False, is not: a fit may try values outside a file's ranges)."""
    if not isinstance(table, dict):
        raise MegasimError(f"{origin}: [model] must be a table, got {table!r}")
    constants, tables = {}, {}
    for key, value in table.items():
        if key in _constant_types():
            constants[key] = parse(_constant_types()[key], value, origin, (f"[model] {key}",)) if checked else value
        elif key in MODEL_LAWS:
            tables[key] = value
        elif key != "laws":
            moved = f" (now {MOVED[key]}, with laws naming it)" if key in MOVED else ""
            raise MegasimError(f"{origin}: unknown field(s) [{key!r}] in [model]{moved}; known: the constants "
                               f"{', '.join(_constant_types())}, `laws` and a table per law "
                               f"({', '.join(MODEL_LAWS.names())})")
    names = table.get("laws")
    if names is not None and (not isinstance(names, list) or not all(isinstance(x, str) for x in names)):
        raise MegasimError(f"{origin}: [model] laws must be a list of law names, got {names!r}")
    return replace(base, **constants).with_laws(names, tables, origin, checked)


@dataclass(frozen=True, kw_only=True)
class GPUModel(GPUSpec):
    """A GPU as the engine runs it: its hardware spec and the model."""

    model: Model = field(default_factory=Model)

    @staticmethod
    def of(spec: GPUSpec, model: Model) -> GPUModel:
        return GPUModel(**{f.name: getattr(spec, f.name) for f in fields(GPUSpec)}, model=model)

    @property
    def spec(self) -> GPUSpec:
        """The hardware part alone."""
        return GPUSpec(**{f.name: getattr(self, f.name) for f in fields(GPUSpec)})

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_gbps * 1e9 * self.model.dram_efficiency / (self.clock_mhz * 1e6)

    @property
    def l2_bytes_per_cycle(self) -> float:
        return self.l2_gbps * 1e9 * self.model.l2_efficiency / (self.clock_mhz * 1e6)

    def for_megakernel(self) -> GPUModel:
        model = self.model.for_megakernel()
        return self if model is self.model else replace(self, model=model)

    def with_model(self, **changes) -> GPUModel:
        """A copy with hardware figures, model constants, `laws` or a law's constants (a table by its name)
        replaced: what a calibration profile does, and what a fit tries. A law's constants given without
        `laws` add the law."""
        hardware = {k: v for k, v in changes.items() if k in _HARDWARE}
        table = {k: v for k, v in changes.items() if k not in _HARDWARE}
        if "laws" not in table and any(k in MODEL_LAWS for k in table):
            table["laws"] = [x.name for x in self.model.laws] + [k for k in table if k in MODEL_LAWS
                                                                  and self.model.named(k) is None]
        return replace(self, **hardware, model=model_from_table(table, "model", self.model, checked=False) if table else self.model)


_HARDWARE = frozenset(f.name for f in fields(GPUSpec))


def gpu_model(spec: GPUSpec, table: dict, origin: str) -> GPUModel:
    """A spec with the `[model]` table of its file (the uncalibrated model), checked."""
    return GPUModel.of(check_spec(spec, origin), model_from_table(table, origin))
