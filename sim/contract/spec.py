"""GPU hardware as data: `scenarios/gpus/<name>.toml` -> frozen `GPUSpec`.

A spec file has two parts. `[hardware]` holds datasheet or measured figures,
each with its source in `[sources]`: that is `GPUSpec`, which both executors
read. `[model]` holds the simulator's constants and laws, which only the
engine reads (`megasim.engine.model`) and a calibration profile replaces.
Loading does no other I/O; a bad file is one MegasimError naming the file.

Each field's type carries its range (`megasim.io.schema`), checked when
a file is loaded: counts are strict positive integers, times and bandwidths
finite and bounded, efficiencies fractions no smaller than 1e-4.
The bounds are generous beyond any real GPU; what they exclude is what makes
the model meaningless or its arithmetic overflow (a negative DRAM efficiency
ran the bandwidth queue backwards forever). Specs built in code (test
fixtures) are not re-checked.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache
from typing import Literal, get_type_hints

from megasim.contract.errors import MegasimError
from megasim.io.schema import Text, float_in, int_in, parse

MAX_SMS = 4096
SmCount = int_in(1, MAX_SMS)
SmId = int_in(0, MAX_SMS - 1)
Cycles = int_in(1, 10**8)
Micros = float_in(0.0, 1e6)
Bandwidth = float_in(1e-3, 1e8)          # GB/s
BytesPerCycle = float_in(1e-3, 1e6)
Efficiency = float_in(1e-4, 1.0)         # a fraction of a peak; below 1e-4 times overflow
OpName = Literal["filter_transform", "input_transform", "gemm", "output_transform"]


def _f(help_: str, default=MISSING):
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata={"help": help_})
    return field(default=default, metadata={"help": help_})


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    name: Text = _f("short name, the file stem")
    full_name: Text = _f("marketing name")
    sm_count: SmCount = _f("streaming multiprocessors")
    sms_per_gpc: SmCount = _f("SM ids per GPC in the dispatch pattern (TPC pairs stride by this)")
    first_wave_lead_sms: tuple[SmId, ...] = _f("SM ids that receive the first blocks before the GPC round robin", ())
    max_threads_per_sm: int_in(1, 2**16) = _f("resident threads per SM")
    max_blocks_per_sm: int_in(1, 1024) = _f("resident blocks per SM")
    regs_per_sm: int_in(1, 2**24) = _f("32-bit registers per SM")
    smem_per_sm_bytes: int_in(1, 2**30) = _f("shared memory per SM usable by blocks")
    max_smem_per_block_bytes: int_in(1, 2**30) = _f("largest shared memory a block may take")
    clock_mhz: float_in(1.0, 1e5) = _f("sustained SM clock under load; cycles convert to time with it")
    fp32_flops_per_cycle_per_sm: int_in(1, 2**20) = _f("2 x FP32 lanes (an FFMA is two FLOPs)")
    dram_gbps: Bandwidth = _f("DRAM bandwidth, GB/s (1e9)")
    l2_bytes: int_in(1, 2**40) = _f("L2 capacity in bytes")
    l2_gbps: Bandwidth = _f("L2 bandwidth, GB/s")
    dram_latency_cycles: Cycles = _f("load-to-use latency of a DRAM access")
    l2_latency_cycles: Cycles = _f("load-to-use latency of an L2 hit")
    sm_bytes_per_cycle: BytesPerCycle = _f("most bytes one SM moves to and from L2 per cycle")
    launch_overhead_us: Micros = _f("from a kernel's last block end to the next kernel's dispatch in a sequence "
                                    "(its first block lands tb_dispatch_latency_cycles later)")
    first_launch_us: Micros = _f("what timing events see of the first launch of a sequence, beyond its blocks' "
                                "work (event to first block start, last block end to event)", 0.0)
    tb_dispatch_latency_cycles: Cycles = _f("from a slot freeing to the next block running")
    tb_dispatch_interval_cycles: float_in(0.0, 1e6, above=True) = _f("the block scheduler hands out one block per this many cycles")
    atomic_latency_cycles: Cycles = _f("a global atomic round trip")
    spin_poll_cycles: Cycles = _f("one poll of a dependency counter (an L2 round trip)")
    sources: dict[Text, Text] = _f("where each figure came from", {})

    @property
    def peak_fp32_tflops(self) -> float:
        return self.sm_count * self.fp32_flops_per_cycle_per_sm * self.clock_mhz * 1e6 / 1e12

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / self.clock_mhz

    def us_to_cycles(self, us: float) -> float:
        return us * self.clock_mhz

SECTIONS = ("hardware", "model", "sources")


def spec_from_dict(data: dict, name: str, origin: str) -> tuple[GPUSpec, dict]:
    """A spec file's tables -> (a checked `GPUSpec`, its `[model]` table, which the engine reads:
    `megasim.engine.model`); anything wrong is one MegasimError naming the field."""
    sections = {k: data.get(k, {}) for k in SECTIONS}
    odd = sorted(set(data) - set(SECTIONS)) + [f"[{k}]" for k, v in sections.items() if not isinstance(v, dict)]
    if odd:
        raise MegasimError(f"{origin}: a GPU spec has the tables [hardware], [model] and [sources]; "
                           f"not {', '.join(map(str, odd))}")
    check_hardware_fields(sections["hardware"], origin)
    flat = {"name": name, **sections["hardware"], "sources": sections["sources"]}
    missing = sorted(f.name for f in fields(GPUSpec)
                     if f.name not in flat and f.default is MISSING and f.default_factory is MISSING)
    if missing:
        raise MegasimError(f"{origin}: missing field(s) {missing} in [hardware]")
    return check_spec(parse(GPUSpec, flat, origin), origin), sections["model"]


def check_hardware_fields(values: dict, origin: str) -> None:
    """One [hardware] table, of a spec or of a profile over one: known names, each in its range."""
    unknown = sorted(set(values) - set(_field_types()) | {"name", "sources"} & set(values))
    if unknown:
        raise MegasimError(f"{origin}: unknown field(s) {unknown} in [hardware]")
    for key, value in values.items():
        parse(_field_types()[key], value, origin, (f"[hardware] {key}",))


def check_spec(spec: GPUSpec, origin: str) -> GPUSpec:
    """What one field's range cannot say: the dispatch pattern's SM ids exist, once each."""
    lead = spec.first_wave_lead_sms
    if any(sm >= spec.sm_count for sm in lead) or len(set(lead)) != len(lead):
        raise MegasimError(f"{origin}: first_wave_lead_sms must be distinct SM ids in 0..{spec.sm_count - 1}, "
                           f"got {list(lead)}")
    return spec


@lru_cache(maxsize=None)
def _field_types() -> dict:
    """Each field's type with its range, evaluated once (an evaluation compiles every annotation: 1 ms)."""
    return get_type_hints(GPUSpec, include_extras=True)
