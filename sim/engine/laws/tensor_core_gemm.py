"""`tensor_core_gemm`: a GEMM whose products run on TF32 tensor cores in three passes (3xTF32), as FP32 work.

3xTF32 splits each FP32 operand into a TF32 "big" part and the TF32 remainder and sums big*big + big*small +
small*big with FP32 accumulation: three tensor-core products per FP32 product, near-FP32 accuracy. The engine
has one compute roof per SM, the FP32 issue rate, so this law says how much FP32 work a 3xTF32 GEMM task is
worth (`fp_factor`, times the FP32 GEMM's own work): its passes at the tensor cores' rate, measured by
`megasim.gpu.microbench.measure_mma_tf32` (mma.sync m16n8k8), at the clock the SM keeps under tensor load,
over the FP32 rate; plus the FP32 work of the split, three operations per operand element once per block tile
(`tiles_per_group` x `gemm_k_per_task` outputs, each element split once, not once per product). A GEMM body
that reaches the same fraction of the tensor rate as the FFMA body does of the FP32 rate has `efficiency_ratio`
1, the declared default the prediction before building used. The measured body (gpu/kernels/gemm_tf32x3.cuh)
reaches less, and less again inside the megakernel, whose other tasks share its registers:
`fused_efficiency_ratio` is the megakernel's GEMM tasks' (0: the same as the GEMM kernel's). A block's latency
beyond its share of the SM (the GEMM body law's step and fixed cycles, which resident blocks hide from each other)
is the FFMA body's times `latency_ratio`: the tensor body holds more registers, so fewer blocks hide it, and the
measured GEMM kernels say it is shorter than the FFMA body's. All three are fitted by calibration
(`megasim.app.calibrate.tensor_law`). The rate defaults are the H200's of 2026-11-29
(docs/results/tensor_core/mma_rate.json).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from megasim.io.schema import float_in
from megasim.engine.laws.base import Law, law


@law("tensor_core_gemm")
@dataclass(frozen=True, kw_only=True)
class TensorCoreGemm(Law):
    mechanism = "gemm_precision"
    tf32_flop_per_cycle_per_sm: float_in(1.0, 1e6) = 1364.55
    tensor_clock_ratio: float_in(0.1, 2.0) = 0.9164  # SM clock under tensor load / under FFMA load (1814 / 1980 MHz)
    passes: float_in(1.0, 9.0) = 3.0
    split_ops_per_element: float_in(0.0, 100.0) = 3.0  # cvt.rna.tf32, subtract, cvt.rna.tf32
    efficiency_ratio: float_in(1e-3, 10.0) = 1.0
    fused_efficiency_ratio: float_in(0.0, 10.0) = 0.0
    latency_ratio: float_in(0.0, 10.0) = 1.0

    def for_megakernel(self) -> TensorCoreGemm:
        """The law as the megakernel's GEMM tasks run under it."""
        if not self.fused_efficiency_ratio:
            return self
        return replace(self, efficiency_ratio=self.fused_efficiency_ratio, fused_efficiency_ratio=0.0)

    def fp_factor(self, partition, fp32_flop_per_cycle_per_sm: float) -> float:
        """FP32 work of a 3xTF32 GEMM task per unit of the FP32 GEMM's work."""
        tensor = (self.passes * fp32_flop_per_cycle_per_sm
                  / (self.tf32_flop_per_cycle_per_sm * self.tensor_clock_ratio) / self.efficiency_ratio)
        m, n = partition.tiles_per_group, partition.gemm_k_per_task
        split = self.split_ops_per_element * (m + n) / (2.0 * m * n)
        return tensor + split
