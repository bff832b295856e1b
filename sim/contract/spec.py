"""GPU descriptions as data: `scenarios/gpus/<name>.toml` -> frozen `GPUSpec`.

A spec has two parts. `[hardware]` holds datasheet or measured figures, each
with its source in `[sources]`. `[model]` holds the simulator's free
constants (efficiencies, L2 policy), which a calibration profile overrides.
Loading does no other I/O; a bad file is one MegasimError naming the file.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace

from megasim.contract.errors import MegasimError
from megasim.contract.problem import OP_NAMES, Op


def _f(help_: str, default=MISSING):
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata={"help": help_})
    return field(default=default, metadata={"help": help_})


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    name: str = _f("short name, the file stem")
    full_name: str = _f("marketing name")
    sm_count: int = _f("streaming multiprocessors")
    sms_per_gpc: int = _f("SM ids per GPC in the dispatch pattern (TPC pairs stride by this)")
    first_wave_lead_sms: tuple = _f("SM ids that receive the first blocks before the GPC round robin", ())
    max_threads_per_sm: int = _f("resident threads per SM")
    max_blocks_per_sm: int = _f("resident blocks per SM")
    regs_per_sm: int = _f("32-bit registers per SM")
    smem_per_sm_bytes: int = _f("shared memory per SM usable by blocks")
    max_smem_per_block_bytes: int = _f("largest shared memory a block may take")
    clock_mhz: float = _f("sustained SM clock under load; cycles convert to time with it")
    fp32_flops_per_cycle_per_sm: int = _f("2 x FP32 lanes (an FFMA is two FLOPs)")
    dram_gbps: float = _f("DRAM bandwidth, GB/s (1e9)")
    l2_bytes: int = _f("L2 capacity in bytes")
    l2_gbps: float = _f("L2 bandwidth, GB/s")
    dram_latency_cycles: int = _f("load-to-use latency of a DRAM access")
    l2_latency_cycles: int = _f("load-to-use latency of an L2 hit")
    sm_bytes_per_cycle: float = _f("most bytes one SM moves to and from L2 per cycle")
    launch_overhead_us: float = _f("gap between back-to-back kernel launches")
    first_launch_us: float = _f("what timing events see of the first launch of a sequence, beyond its blocks' "
                                "work (event to first block start, last block end to event)", 0.0)
    tb_dispatch_latency_cycles: int = _f("from a slot freeing to the next block running")
    tb_dispatch_interval_cycles: float = _f("the block scheduler hands out one block per this many cycles")
    atomic_latency_cycles: int = _f("a global atomic round trip")
    spin_poll_cycles: int = _f("one poll of a dependency counter (an L2 round trip)")
    # model constants: what calibration fits
    dram_efficiency: float = _f("achievable fraction of dram_gbps", 0.9)
    l2_efficiency: float = _f("achievable fraction of l2_gbps", 0.8)
    l2_usable_fraction: float = _f("fraction of L2 that holds reusable data (the rest: streaming, set conflicts)", 0.75)
    compute_efficiency: dict = _f("achieved fraction of FP32 peak per task type", {})
    gemm_half_efficiency_channels: float = _f(
        "GEMM efficiency is compute_efficiency.gemm * C / (C + this): a block's fixed prologue and epilogue "
        "cost as many channels of main loop", 0.0)
    task_overhead_cycles: int = _f("per megakernel block: ticket, task-map read, the counter atomic (non-fused blocks have none)", 0)
    block_launch_cycles: float = _f(
        "of a new block's start (dispatch latency aside), the part that only a new block pays: its launch "
        "and prologue, within task_overhead_cycles. A persistent block's next task skips it", 0.0)
    block_bytes_per_cycle: dict = _f(
        "per task type, the bytes one block moves per cycle on its own (its loads in flight over their "
        "latency, Little's law); a block takes at least its bytes over this. Missing: no such limit", {})
    dram_access_efficiency: dict = _f(
        "per task type, the fraction of the streaming DRAM rate its access pattern reaches (a transform writes "
        "alpha^2 strided streams at once); its DRAM bytes cost 1/this on the shared DRAM queue. Missing: 1", {})
    step_cycles: dict = _f(
        "per task type, the latency of one serial step of a block (a transform's round of items, a GEMM's "
        "channel step: `megasim.contract.work.serial_steps`); a block takes at least its steps times this. "
        "Missing: 0", {})
    block_work_cv: float = _f("coefficient of variation of a block's work (lognormal, mean 1): real blocks of "
                              "one type do not finish in lockstep", 0.0)
    sources: dict = _f("where each figure came from", {})

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

    def efficiency(self, op: Op, channels: int | None = None) -> float:
        """Achieved fraction of FP32 peak for a task type; a GEMM's depends on its loop length C."""
        eff = float(self.compute_efficiency.get(OP_NAMES[op], 1.0))
        if op == Op.GEMM and channels and self.gemm_half_efficiency_channels:
            eff *= channels / (channels + self.gemm_half_efficiency_channels)
        return eff

    def with_model(self, **model) -> GPUSpec:
        """A copy with model constants replaced (what a calibration profile does)."""
        return replace(self, **model)


NON_NEGATIVE = {"task_overhead_cycles", "block_launch_cycles", "gemm_half_efficiency_channels", "block_work_cv", "first_launch_us",
                "launch_overhead_us"}


def gpu_from_dict(data: dict, name: str, origin: str) -> GPUSpec:
    flat = {"name": name, **data.get("hardware", {}), **data.get("model", {}),
            "sources": data.get("sources", {})}
    known = {f.name for f in fields(GPUSpec)}
    unknown = set(flat) - known
    if unknown:
        raise MegasimError(f"{origin}: unknown field(s) {sorted(unknown)}")
    missing = sorted(f.name for f in fields(GPUSpec)
                     if f.name not in flat and f.default is MISSING and f.default_factory is MISSING)
    if missing:
        raise MegasimError(f"{origin}: missing field(s) {missing}")
    if "first_wave_lead_sms" in flat:
        flat["first_wave_lead_sms"] = tuple(flat["first_wave_lead_sms"])
    try:
        spec = GPUSpec(**flat)
    except TypeError as exc:
        raise MegasimError(f"{origin}: {exc}") from None
    for f in fields(GPUSpec):
        v = getattr(spec, f.name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and f.name not in NON_NEGATIVE and v <= 0:
            raise MegasimError(f"{origin}: {f.name} must be positive, got {v}")
    return spec

