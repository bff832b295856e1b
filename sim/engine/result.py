"""What a simulation returns: per-run statistics and the fused-vs-non-fused result."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from megasim.engine import RawRun
from megasim.engine.l2 import hit_rate
from megasim.contract.records import spin_us


@dataclass(frozen=True, eq=False)
class RunStats:
    """One executed launch sequence (the megakernel, or the four kernels)."""

    time_us: float
    time_cycles: float
    records: np.ndarray
    block_dram_bytes: np.ndarray
    block_flops: np.ndarray
    l2: dict
    kernel_spans_us: list

    @classmethod
    def from_raw(cls, raw: RawRun, graph, gpu) -> RunStats:
        to_us = gpu.cycles_to_us
        return cls(time_us=to_us(raw.total_cycles), time_cycles=raw.total_cycles, records=raw.records,
                   block_dram_bytes=raw.block_dram_bytes, block_flops=graph.flops[raw.records["task"]],
                   l2=raw.l2_stats, kernel_spans_us=[(to_us(a), to_us(b)) for a, b in raw.kernel_spans_cycles])

    @property
    def dram_bytes(self) -> float:
        return float(self.block_dram_bytes.sum())

    @property
    def l2_hit_rate(self) -> float:
        return hit_rate(self.l2)

    @property
    def spin_us(self) -> float:
        return float(spin_us(self.records).sum())

    def utilisation(self, gpu, bins: int = 200) -> dict:
        """DRAM and FP32 utilisation over time, each block's bytes and FLOPs spread over its work."""
        rec = self.records
        t0, t1 = rec["ready_us"], rec["end_us"]
        edges = np.linspace(0.0, max(self.time_us, 1e-9), bins + 1)
        width = edges[1] - edges[0]
        out = {"t_us": (edges[:-1] + edges[1:]) / 2}
        for name, amount, peak_per_us in (
                ("dram", self.block_dram_bytes, gpu.dram_gbps * 1e3),
                ("fp32", self.block_flops, gpu.peak_fp32_tflops * 1e6)):
            rate = amount / np.maximum(t1 - t0, 1e-9)
            series = np.zeros(bins)
            lo = np.clip(((t0 - edges[0]) / width).astype(int), 0, bins - 1)
            hi = np.clip(((t1 - edges[0]) / width).astype(int), 0, bins - 1)
            for i in range(bins):
                active = (lo <= i) & (hi >= i)
                overlap = np.minimum(t1[active], edges[i + 1]) - np.maximum(t0[active], edges[i])
                series[i] = (rate[active] * np.maximum(overlap, 0)).sum() / width
            out[name] = series / peak_per_us
        return out


@dataclass(frozen=True, eq=False)
class SimResult:
    layer: str
    gpu: str
    strategy: str
    params: dict
    policy: str
    mode: str
    fused: RunStats
    nonfused: RunStats
    infusible: int
    num_tbs: int
    sim_seconds: float
    graph_summary: dict = field(default_factory=dict)
    gemm: str = "generic"            # the GEMM task's body, fused and non-fused
    precision: str = "fp32"          # its products' arithmetic
    fused_sim_cpu_s: float = 0.0     # process CPU time of the megakernel's simulation alone
    nonfused_sim_cpu_s: float = 0.0  # and of the four non-fused kernels'

    @property
    def speedup(self) -> float:
        return self.nonfused.time_us / self.fused.time_us

    @property
    def fused_tbs_per_cpu_s(self) -> float:
        """Simulated thread blocks of the megakernel per second of CPU time: the engine's speed."""
        return self.num_tbs / self.fused_sim_cpu_s if self.fused_sim_cpu_s > 0 else 0.0

    def to_json(self) -> dict:
        f, n = self.fused, self.nonfused
        return {"layer": self.layer, "gpu": self.gpu, "strategy": self.strategy, "params": self.params,
                "policy": self.policy, "mode": self.mode, "gemm": self.gemm, "precision": self.precision,
                "fused_us": f.time_us,
                "nonfused_us": n.time_us,
                "speedup": self.speedup, "num_tbs": self.num_tbs, "infusible": self.infusible,
                "l2_hit_rate": f.l2_hit_rate, "nonfused_l2_hit_rate": n.l2_hit_rate,
                "dram_bytes": f.dram_bytes, "nonfused_dram_bytes": n.dram_bytes,
                "spin_us": f.spin_us, "sim_seconds": self.sim_seconds,
                "fused_sim_cpu_s": self.fused_sim_cpu_s, "nonfused_sim_cpu_s": self.nonfused_sim_cpu_s,
                "fused_tbs_per_cpu_s": self.fused_tbs_per_cpu_s,
                "nonfused_kernels_us": [b - a for a, b in n.kernel_spans_us],
                "l2": f.l2, "graph": self.graph_summary}
