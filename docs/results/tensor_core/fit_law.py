"""The `tensor_core_gemm` law as calibration fits it (stage 5, `megasim.app.calibrate.tensor_law`), with its report.

    python docs/results/tensor_core/fit_law.py docs/results/tensor_core      # any machine, about a minute

The fit is the calibration's own, on the same raw file (scenarios/calibrations/raw/h200_tensor_core.json, which
measure.py writes) and the same split: the layers the calibration runs hold out (ResNet-3, VGG-2, YOLOv3-2) judge
it, the other nine fit it, over the committed H200 profile's FP32 model. This script only adds the study's
view: on every layer the predicted and measured gain of 3xTF32 over the FFMA build (GEMM kernel, non-fused and
fused convolution) and whether they agree within 5 points. Writes OUT/fitted_law.json and OUT/fitted_law.md.
"""
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from megasim.app.calibrate.profile import simulation_model
from megasim.app.calibrate.raw import COMMITTED_RAW
from megasim.app.calibrate.tensor_law import LAW, KINDS, fit_tensor_law, load_tensor_core, summary

RAW = COMMITTED_RAW / "h200_tensor_core.json"


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    gpu, note, _ = simulation_model("h200")
    rows = load_tensor_core(RAW)
    with ProcessPoolExecutor(2) as pool:
        model, errors, judged = fit_tensor_law(rows, gpu, pool)
    law = model[LAW]
    train = sorted({r["layer"] for r in rows if r["split"] == "train"})
    held = sorted({r["layer"] for r in rows if r["split"] == "heldout"})
    doc = {"model": note, "measurements": str(RAW.relative_to(COMMITTED_RAW.parents[2])), "fitted_on": train,
           "held_out": held, **law, "mean_abs_log_error": errors,
           "rows": [{"layer": r["layer"], "variant": r["variant"], "held_out": r["split"] == "heldout",
                     **{k: r[k] for k in KINDS}} for r in judged]}
    (out / "fitted_law.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"efficiency_ratio {law['efficiency_ratio']}, latency_ratio {law['latency_ratio']}, fused_efficiency_ratio "
             f"{law['fused_efficiency_ratio']} (fitted on the gains over FP32 of the GEMM kernels and fused "
             f"convolutions of {', '.join(train)}, F(4), judged on their F(2) and F(6) too; mean |log gain error| "
             f"{errors['gemm_gain']:.3f}, "
             f"{errors['fused_gain']:.3f}); held out: {', '.join(held)}", "",
             "| layer | variant | held out | GEMM gain % predicted / measured | non-fused | fused | "
             "3xTF32 GEMM us predicted / measured |",
             "|---|---|---|---|---|---|---|"]
    for row in doc["rows"]:
        cells = [f"{100 * row[k]['predicted_gain']:+.0f} / {100 * row[k]['measured_gain']:+.0f}"
                 + ("" if row[k]["within_5_points"] else " (off)") for k in KINDS]
        lines.append(f"| {row['layer']} | F({row['variant']}) | {'yes' if row['held_out'] else ''} | " + " | ".join(cells)
                     + f" | {row['gemm']['predicted_3xtf32_us']:.0f} / {row['gemm']['measured_3xtf32_us']:.0f} |")
    for split, said in (("train", "training layers"), ("heldout", "held out")):
        for kind, s in summary(judged, split).items():
            lines.append(f"- {kind}, {said}: gain within 5 points on {s['gain_agrees']} of {s['rows']}; "
                         f"3xTF32 time MAPE {100 * s['mape']:.1f}%")
    (out / "fitted_law.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
