"""The 3xTF32 GEMM body on the paper layers beside the FFMA warp body and cuBLAS, printed beside the committed
prediction (predicted_3xtf32.json).

    python docs/results/tensor_core/measure.py OUT [--gpu h200] [--variants 2,4,6] [--reps 20]   # a device

The rows are calibration's own (`megasim.app.calibrate.tensor_core_runs`, the part `tensor_core` of
`megasim calibrate`): OUT/<gpu>_tensor_core.json is the raw file stage 5 fits the `tensor_core_gemm` law on.
"""
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    from megasim.app.calibrate.tensor_core_runs import measure_tensor_core
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--gpu", default="h200")
    p.add_argument("--variants", default="2,4,6", help="comma-separated Winograd variants (2, 4, 6)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--layers", default="", help="comma-separated layer names (default: every paper layer that fits)")
    args = p.parse_args()
    path = args.out / f"{args.gpu}_tensor_core.json"
    measure_tensor_core(args.gpu, path, args.reps, args.layers.split(",") if args.layers else None, float("inf"),
                        variants=tuple(int(v) for v in args.variants.split(",")))
    predicted = {(r["layer"], r["variant"]): r for r in json.loads((HERE / "predicted_3xtf32.json").read_text())["rows"]}
    for row in json.loads(path.read_text())["rows"]:
        pred = predicted.get((row["layer"], row["variant"]), {})
        f, t = row["fp32"], row["3xtf32"]
        print(f"{row['layer']} F{row['variant']}: GEMM {f['gemm_us']:.0f} -> {t['gemm_us']:.0f} us "
              f"({t['gemm_tflops']:.0f} TFLOP/s, cuBLAS {row['cublas_tflops']:.0f}; predicted "
              f"{pred.get('gemm_3xtf32_us') or float('nan'):.0f}), non-fused {f['nonfused_us']:.0f} -> "
              f"{t['nonfused_us']:.0f}, fused {f['fused_us']:.0f} -> {t['fused_us']:.0f}, err {f['rel_err']:.1e} -> "
              f"{t['rel_err']:.1e}, same bits fused/non-fused {f['fused_equals_nonfused']}/{t['fused_equals_nonfused']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
