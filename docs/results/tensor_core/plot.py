"""The 3xTF32 body's gain over FFMA per paper layer: as predicted before building, as the fitted law predicts,
and as measured, for the GEMM kernel and the fused convolution; and its error beside the FFMA build's.

    python docs/results/tensor_core/plot.py docs/results/tensor_core      # any machine, from the committed JSON

Writes OUT/tf32x3_gain.png.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[2] / "scenarios" / "calibrations" / "raw" / "h200_tensor_core.json"  # measure.py's rows


def main() -> int:
    out = Path(sys.argv[1])
    measured = [r for r in json.loads(RAW.read_text())["rows"] if r["variant"] == 4]
    fitted = {r["layer"]: r for r in json.loads((HERE / "fitted_law.json").read_text())["rows"] if r["variant"] == 4}
    names = [r["layer"] for r in measured]
    x = range(len(names))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), gridspec_kw={"width_ratios": [1, 1, 0.8]})
    for ax, kind, key, title in ((axes[0], "gemm", "gemm_us", "GEMM kernel"),
                                 (axes[1], "fused", "fused_us", "fused convolution (static, paper mapping)")):
        before = [100 * (r["predicted"][f"{kind}_fp32_us"] / r["predicted"][f"{kind}_3xtf32_us"] - 1) for r in measured]
        law = [100 * fitted[n][kind]["predicted_gain"] for n in names]
        meas = [100 * (r["fp32"][key] / r["3xtf32"][key] - 1) for r in measured]
        w = 0.27
        ax.bar([i - w for i in x], before, w, color="#c9c9c9", label="predicted before building (declared law)")
        ax.bar(list(x), law, w, color="#7fa7d6", label="predicted by the fitted law")
        ax.bar([i + w for i in x], meas, w, color="#d1495b", label="measured")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(list(x), names, rotation=60, ha="right")
        ax.set_ylabel("3xTF32 gain over FFMA, %")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    held = [i for i, n in enumerate(names) if fitted[n]["held_out"]]
    for ax in axes[:2]:
        for i in held:
            ax.axvspan(i - 0.5, i + 0.5, color="#f3e9c6", zorder=0)
        ax.text(0.01, 0.98, "shaded: held out of the fit", transform=ax.transAxes, fontsize=8, va="top")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=9, frameon=False,
               bbox_to_anchor=(0.36, 0.93))
    ax = axes[2]
    ax.scatter([r["fp32"]["rel_err"] for r in measured], [r["3xtf32"]["rel_err"] for r in measured], color="#d1495b")
    lim = [0, 5.5e-6]
    ax.plot(lim, lim, color="gray", lw=0.8, label="equal error")
    ax.axhline(5e-6, color="black", lw=0.8, ls="--", label="FP32 bound, F(4)")
    ax.set_xlim(lim), ax.set_ylim(lim)
    ax.set_xlabel("FFMA build: relative L2 error vs float64")
    ax.set_ylabel("3xTF32 build")
    ax.set_title("error of each layer's convolution")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    gains = [100 * (r["fp32"]["gemm_us"] / r["3xtf32"]["gemm_us"] - 1) for r in measured]
    fig.suptitle(f"3xTF32 on the H200's tensor cores (mma.sync), F(4x4), batch 64: error at or below FFMA's, "
                 f"GEMM {min(gains):+.0f} to {max(gains):+.0f}% faster", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(out / "tf32x3_gain.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
