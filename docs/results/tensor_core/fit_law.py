"""Fit the `tensor_core_gemm` law's efficiency to the measured 3xTF32 body, and judge it on layers it never saw.

    python docs/results/tensor_core/fit_law.py docs/results/tensor_core      # any machine, a few minutes

The law's `efficiency_ratio` (the fraction of the tensor rate the body reaches, relative to the FFMA body's
fraction of the FP32 rate) was declared 1 for the prediction made before building. Here it is fitted on the
measured GEMM kernels of the ResNet and VGG layers (measured_3xtf32.json, F(4x4), batch 64): the value whose
predicted 3xTF32 GEMM times have the least mean absolute log error, found on a grid then refined. Then
`fused_efficiency_ratio`, the megakernel's GEMM tasks', the same way on the same layers' fused convolutions.
The YOLOv3 layers are held out. On every layer it reports the predicted and measured gain of 3xTF32 over the FFMA build
(GEMM kernel, non-fused and fused convolution; the FFMA predictions are the calibrated profile's) and whether
they agree within 5 points. Writes OUT/fitted_law.json and OUT/fitted_law.md.
"""
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

from measure import graph_of  # this folder's, on the path when run as a script: the builds it measured
from megasim.app.calibrate.profile import simulation_model
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.engine.interpreter import SimpyInterpreter

HERE = Path(__file__).resolve().parent
HELD_OUT = ("yolov3",)


def model_with(gpu, efficiency: float, fused: float = 0.0):
    names = [x.name for x in gpu.model.laws] + ["tensor_core_gemm"]
    table = {"efficiency_ratio": efficiency, "fused_efficiency_ratio": fused}
    return replace(gpu, model=gpu.model.with_laws(names, {"tensor_core_gemm": table}))


def predict(gpu, graph, kinds=("gemm", "nonfused", "fused"), precision: str = "3xtf32") -> dict:
    sim = SimpyInterpreter(gpu, gemm="warp", precision=precision)
    out = {}
    for kind in kinds:
        mapping = make(graph, "paper") if kind == "fused" else None
        out[kind] = sim.run(graph, mapping, RunConfig(kind)).time_us
    return out


def fit(rows, kind: str, key: str, model_for) -> tuple[float, float]:
    """(value, mean |log error|) of the constant `model_for` sets that best predicts the training rows'
    3xTF32 `kind` times (a grid of 0.30-1.00, then steps of 0.01 around the best)."""
    graphs = [(graph_of(r["layer"], r["variant"]), r["3xtf32"][key]) for r in rows]

    def error(value):
        model = model_for(value)
        return sum(abs(math.log(predict(model, g, (kind,))[kind] / us)) for g, us in graphs) / len(graphs)

    grid = [round(0.30 + 0.05 * i, 2) for i in range(15)]
    best = min(grid, key=error)
    fine = [round(best + 0.01 * i, 2) for i in range(-4, 5)]
    best = min(fine, key=error)
    return best, error(best)


def main() -> int:
    out = Path(sys.argv[1])
    measured = json.loads((HERE / "measured_3xtf32.json").read_text())["rows"]
    gpu, note, _ = simulation_model("h200")
    train = [r for r in measured if not r["layer"].startswith(HELD_OUT)]
    eff, train_err = fit(train, "gemm", "gemm_us", lambda v: model_with(gpu, v))
    fused_eff, fused_err = fit(train, "fused", "fused_us", lambda v: model_with(gpu, eff, v))
    model = model_with(gpu, eff, fused_eff)
    rows = []
    for r in measured:
        graph = graph_of(r["layer"], r["variant"])
        fp32 = predict(gpu, graph, precision="fp32")
        tc = predict(model, graph)
        row = {"layer": r["layer"], "variant": r["variant"], "held_out": r["layer"].startswith(HELD_OUT)}
        for kind, key in (("gemm", "gemm_us"), ("nonfused", "nonfused_us"), ("fused", "fused_us")):
            pred_gain = fp32[kind] / tc[kind] - 1
            meas_gain = r["fp32"][key] / r["3xtf32"][key] - 1
            row[kind] = {"predicted_3xtf32_us": tc[kind], "measured_3xtf32_us": r["3xtf32"][key],
                         "predicted_gain": pred_gain, "measured_gain": meas_gain,
                         "within_5_points": abs(pred_gain - meas_gain) <= 0.05}
        rows.append(row)
    doc = {"model": note, "fitted_on": sorted({r["layer"] for r in train}), "efficiency_ratio": eff,
           "fused_efficiency_ratio": fused_eff, "train_mean_abs_log_error": {"gemm": train_err, "fused": fused_err},
           "rows": rows}
    (out / "fitted_law.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"efficiency_ratio {eff}, fused_efficiency_ratio {fused_eff} (fitted on the GEMM kernels and fused "
             f"convolutions of {', '.join(doc['fitted_on'])}; mean |log error| {train_err:.3f}, {fused_err:.3f}); "
             "YOLOv3 held out", "",
             "| layer | held out | GEMM gain % predicted / measured | non-fused | fused | 3xTF32 GEMM us predicted / measured |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        cells = [f"{100 * row[k]['predicted_gain']:+.0f} / {100 * row[k]['measured_gain']:+.0f}"
                 + ("" if row[k]["within_5_points"] else " (off)") for k in ("gemm", "nonfused", "fused")]
        lines.append(f"| {row['layer']} | {'yes' if row['held_out'] else ''} | " + " | ".join(cells)
                     + f" | {row['gemm']['predicted_3xtf32_us']:.0f} / {row['gemm']['measured_3xtf32_us']:.0f} |")
    for kind in ("gemm", "nonfused", "fused"):
        for held in (False, True):
            sel = [r for r in rows if r["held_out"] == held]
            ok = sum(r[kind]["within_5_points"] for r in sel)
            mape = sum(abs(r[kind]["predicted_3xtf32_us"] / r[kind]["measured_3xtf32_us"] - 1) for r in sel) / len(sel)
            lines.append(f"- {kind}, {'held out' if held else 'fitted'}: gain within 5 points on {ok} of {len(sel)}; "
                         f"3xTF32 time MAPE {100 * mape:.1f}%")
    (out / "fitted_law.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
