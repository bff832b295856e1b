"""GPU descriptions as data: `scenarios/gpus/<name>.toml` -> frozen `GPUSpec`.

A spec has two parts. `[hardware]` holds datasheet or measured figures, each
with its source in `[sources]`. `[model]` holds the simulator's free
constants (efficiencies, L2 policy), which a calibration profile overrides.
Loading does no other I/O; a bad file is one MegasimError naming the file.

Each field's type carries its range (`megasim.io.schema`), checked when
a file is loaded: counts are strict positive integers, times and bandwidths
finite and bounded, efficiencies fractions no smaller than 1e-4.
The bounds are generous beyond any real GPU; what they exclude is what makes
the model meaningless or its arithmetic overflow (a negative DRAM efficiency
ran the bandwidth queue backwards forever). Specs built in code (`with_model`,
test fixtures) are not re-checked.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from functools import lru_cache
from typing import Literal, get_type_hints

from megasim.contract.errors import MegasimError
from megasim.contract.problem import OP_NAMES, Op
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
GemmLawTerm = Literal["compute_efficiency", "step_cycles", "block_fixed_cycles"]


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
    # model constants: what calibration fits
    dram_efficiency: Efficiency = _f("achievable fraction of dram_gbps", 0.9)
    l2_efficiency: Efficiency = _f("achievable fraction of l2_gbps", 0.8)
    l2_usable_fraction: Efficiency = _f("fraction of L2 that holds reusable data (the rest: streaming, set conflicts)", 0.75)
    compute_efficiency: dict[OpName, Efficiency] = _f("achieved fraction of FP32 peak per task type", {})
    task_overhead_cycles: int_in(0, 10**8) = _f("per megakernel block: ticket, task-map read, the counter atomic (non-fused blocks have none)", 0)
    wait_check_cycles: float_in(0.0, 1e8) = _f(
        "per dependency counter a megakernel block polls, what reading it costs even when it is already zero "
        "(an acquire load's round trip); a block waiting on two counters pays it twice before its work", 0.0)
    dram_access_efficiency: dict[OpName, Efficiency] = _f(
        "per task type, the fraction of the streaming DRAM rate its access pattern reaches (a transform writes "
        "alpha^2 strided streams at once); its DRAM bytes cost 1/this on the shared DRAM queue. Missing: 1", {})
    step_cycles: dict[OpName, float_in(0.0, 1e8)] = _f(
        "per task type, the latency of one serial step of a block (a transform's round of items, a GEMM's "
        "channel step: `megasim.contract.work.serial_steps`); its steps times this come on top of its DRAM, L2 "
        "and FP32 jobs (docs/decisions.md, 'A block's latency adds to its throughput'). Missing: 0", {})
    block_fixed_cycles: dict[OpName, float_in(0.0, 1e8)] = _f(
        "per task type, cycles every block spends on top of its jobs and its serial steps: index arithmetic, "
        "the first loads' latency, the drain of its last step and its stores. Missing: 0", {})
    sm_sharing: Literal["jobs", "resident"] = _f(
        "who shares an SM's FP32 issue rate: 'jobs', the blocks whose FP32 work is still running (a block in "
        "its serial-step latency leaves the SM to the others), or 'resident', every block working on the SM "
        "until it ends (per-block traces: a GEMM block's work grows as a + b x the GEMM blocks working beside "
        "it, docs/decisions.md, 'The resident form')", "jobs")
    issue_weight: dict[OpName, float_in(0.0, 1e6, above=True)] = _f(
        "per task type, its weight in sharing an SM's FP32 issue with blocks of other types: a block gets its "
        "weight over the weights of all blocks working on the SM (megasim.engine.weighted_psqueue). Setting "
        "any implies sm_sharing 'resident' and drops the per-block cap of 2 x threads FLOPs per cycle. "
        "Missing: 1. Blocks of one type share equally whatever their weight", {})
    first_wave_stagger: dict[OpName, float_in(0.0, 0.9)] = _f(
        "per task type, how far apart the blocks of a non-fused kernel's first wave on one SM end: started together, "
        "a block of this type and of rank r of k on its SM does 1 + this x (2r / (k - 1) - 1) of its work, so they "
        "end in their arrival order, as the oldest warps are issued first (per-block traces: three GEMM blocks "
        "started together end at 79, 88 and 102 us, and the last wave then spreads one block per SM; "
        "docs/decisions.md, 'The non-fused GEMM's first wave is staggered'). `calibrate` reads the GEMM's from the "
        "trace sample "
        "(`megasim.app.calibrate.end_order.stagger_reading`). Sharing keeps the order for the blocks that "
        "follow. The megakernel's first wave is not staggered: its blocks start work as their parents end "
        "(staggering its GEMMs cost a Spearman layer and 0.6 points of regret, 2026-11-27). "
        "Missing: 0, they end together", {})
    gemm_neighbour_stretch: dict[OpName, float_in(0.0, 100.0)] = _f(
        "per task type, how much slower a block's work runs beside a working GEMM block on its SM: its work "
        "(ready to end) takes 1 + this x f as long, f the fraction of its jobs' time a GEMM worked there "
        "(per-block traces: an input transform beside working GEMMs takes 1.2-1.6x what it takes beside "
        "none, docs/decisions.md, 'A GEMM weighs 2 in an SM's issue'). Missing: 0", {})
    gemm_bodies: dict[Text, dict[GemmLawTerm, float_in(0.0, 1e8)]] = _f(
        "per GEMM body (`megasim.contract.resources.gemm_body`: the block's threads, each thread's register "
        "block, vector or scalar loads), the GEMM's own compute_efficiency, step_cycles and "
        "block_fixed_cycles in place of the gemm entries: the per-block traces fit one law per body with a "
        "third of the error of one law for all (docs/decisions.md, 'One GEMM law per GEMM body'). Missing: the gemm "
        "entries", {})
    fused_gemm_bodies: dict[Text, dict[GemmLawTerm, float_in(0.0, 1e8)]] = _f(
        "per GEMM body, the law of the megakernel's GEMM blocks where it is not the GEMM kernel's (gemm_bodies): "
        "fitted apart on a trace sample's fused and non-fused launches, the megakernel's blocks take 0-6% longer "
        "for the same work (docs/decisions.md, 'The megakernel's GEMM blocks have laws of their own'). "
        "Missing: gemm_bodies", {})
    block_work_cv: float_in(0.0, 10.0) = _f("coefficient of variation of a block's work (lognormal, mean 1): real blocks of "
                              "one type do not finish in lockstep", 0.0)
    sources: dict[Text, Text] = _f("where each figure came from", {})

    @property
    def dram_bytes_per_cycle(self) -> float:
        return self.dram_gbps * 1e9 * self.dram_efficiency / (self.clock_mhz * 1e6)

    @property
    def l2_bytes_per_cycle(self) -> float:
        return self.l2_gbps * 1e9 * self.l2_efficiency / (self.clock_mhz * 1e6)

    @property
    def peak_fp32_tflops(self) -> float:
        return self.sm_count * self.fp32_flops_per_cycle_per_sm * self.clock_mhz * 1e6 / 1e12

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / self.clock_mhz

    def us_to_cycles(self, us: float) -> float:
        return us * self.clock_mhz

    def efficiency(self, op: Op) -> float:
        """Achieved fraction of FP32 peak for a task type."""
        return float(self.compute_efficiency.get(OP_NAMES[op], 1.0))

    def for_gemm_body(self, body: str) -> GPUSpec:
        """This spec with the GEMM's constants of `body` (`gemm_bodies`) in place of the gemm entries."""
        law = self.gemm_bodies.get(body)
        if not law:
            return self
        return replace(self, **{term: {**getattr(self, term), "gemm": value} for term, value in law.items()})

    def for_megakernel(self) -> GPUSpec:
        """This spec as the megakernel's blocks run: `fused_gemm_bodies` over `gemm_bodies`."""
        if not self.fused_gemm_bodies:
            return self
        return replace(self, gemm_bodies={**self.gemm_bodies, **self.fused_gemm_bodies})

    def with_model(self, **model) -> GPUSpec:
        """A copy with model constants replaced (what a calibration profile does)."""
        return replace(self, **model)


SECTIONS = ("hardware", "model", "sources")


def gpu_from_dict(data: dict, name: str, origin: str) -> GPUSpec:
    """A spec file's tables -> a checked `GPUSpec`; anything wrong is one MegasimError naming the field."""
    sections = {k: data.get(k, {}) for k in SECTIONS}
    odd = sorted(set(data) - set(SECTIONS)) + [f"[{k}]" for k, v in sections.items() if not isinstance(v, dict)]
    if odd:
        raise MegasimError(f"{origin}: a GPU spec has the tables [hardware], [model] and [sources]; "
                           f"not {', '.join(map(str, odd))}")
    for section in ("hardware", "model"):
        check_model_fields(sections[section], origin, section)
    flat = {"name": name, **sections["hardware"], **sections["model"], "sources": sections["sources"]}
    missing = sorted(f.name for f in fields(GPUSpec)
                     if f.name not in flat and f.default is MISSING and f.default_factory is MISSING)
    if missing:
        raise MegasimError(f"{origin}: missing field(s) {missing}")
    return check_spec(parse(GPUSpec, flat, origin), origin)


def check_model_fields(values: dict, origin: str, section: str) -> None:
    """One [hardware] or [model] table, of a spec or of a profile over one: known names, each in its range."""
    unknown = set(values) - {f.name for f in fields(GPUSpec)}
    if unknown:
        raise MegasimError(f"{origin}: unknown field(s) {sorted(unknown)} in [{section}]")
    for key, value in values.items():
        parse(_field_types()[key], value, origin, (f"[{section}] {key}",))


def check_spec(spec: GPUSpec, origin: str) -> GPUSpec:
    """What one field's range cannot say: a GEMM body's efficiency is a fraction; the dispatch pattern's SM ids
    exist, once each."""
    for name in ("gemm_bodies", "fused_gemm_bodies"):
        bad = sorted(body for body, law in getattr(spec, name).items()
                     if not 1e-4 <= law.get("compute_efficiency", 1.0) <= 1.0)
        if bad:
            raise MegasimError(f"{origin}: {name} {bad}: compute_efficiency must be a fraction in [1e-4, 1]")
    lead = spec.first_wave_lead_sms
    if any(sm >= spec.sm_count for sm in lead) or len(set(lead)) != len(lead):
        raise MegasimError(f"{origin}: first_wave_lead_sms must be distinct SM ids in 0..{spec.sm_count - 1}, "
                           f"got {list(lead)}")
    return spec


@lru_cache(maxsize=None)
def _field_types() -> dict:
    """Each field's type with its range, evaluated once (an evaluation compiles every annotation: 1 ms)."""
    return get_type_hints(GPUSpec, include_extras=True)
