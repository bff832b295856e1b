"""The H200's TF32 tensor-core rate and latency, the constants of the 3xTF32 GEMM law, beside the FP32 FFMA rate.

    python docs/results/tensor_core/mma_rate.py OUT      # on a device, after .ci/device_site.sh

`megasim.gpu.microbench.measure_mma_tf32` (mma.sync m16n8k8, FP32 accumulate: 8 independent accumulators a warp,
32 warps an SM; one dependent chain for the latency) and `measure_fp32` (FFMA), in one process. Writes
OUT/mma_rate.json and prints both rates.
"""
import json
import sys
from pathlib import Path

from megasim.gpu.microbench import _Bench, make_header, measure_fp32, measure_mma_tf32


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    b = _Bench()
    doc = {"header": make_header(), "mma_tf32": measure_mma_tf32(b, reps=10), "fp32": measure_fp32(b, reps=10)}
    (out / "mma_rate.json").write_text(json.dumps(doc, indent=1))
    m, f = doc["mma_tf32"], doc["fp32"]
    print(f"TF32 mma.sync: {m['tflops']:.1f} TFLOP/s, {m['flop_per_cycle_per_sm']:.0f} FLOP/cycle/SM at "
          f"{m['sm_clock_mhz']:.0f} MHz, latency {m['latency_cycles_per_mma']:.1f} cycles per mma")
    print(f"FP32 FFMA: {f['tflops']:.1f} TFLOP/s, {f['flop_per_cycle_per_sm']:.0f} FLOP/cycle/SM at "
          f"{f['sm_clock_mhz']:.0f} MHz")
    print(f"3xTF32 ceiling: {m['tflops'] / 3:.1f} TFLOP/s, {m['tflops'] / 3 / f['tflops']:.2f}x the FFMA rate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
