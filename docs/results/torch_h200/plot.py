"""megasim.torch against torch per network and batch, eager and under a CUDA graph, from the benchmark's JSON.

    python docs/results/torch_h200/plot.py docs/results/torch_h200/results      # any machine, seconds

Each bar is megasim / torch (best layout of each, eager; channels_last under a CUDA graph); under 1 is faster.
Eager bars where `settle` handed the network back to torch (both layouts) are hatched. Writes
OUT/torch_ratio.png.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> int:
    out = Path(sys.argv[1])
    rows = json.loads((HERE / "results" / "torch_bench.json").read_text())["results"]
    nets = list(dict.fromkeys(r["network"] for r in rows))
    batches = sorted({r["batch"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    colors = {1: "#7fa7d6", 16: "#3d6fb0", 64: "#1b3f73"}
    w = 0.26
    for ax, kind in zip(axes, ("eager", "CUDA graph")):
        for j, b in enumerate(batches):
            xs, ys, hatch = [], [], []
            for i, net in enumerate(nets):
                r = next(r for r in rows if r["network"] == net and r["batch"] == b)
                e = r["end_to_end_ms"]
                if kind == "eager":
                    ratio = min(e["megasim"], e["megasim-cl"]) / min(e["torch"], e["torch-cl"])
                    kept = {s["kept"] for s in (r.get("settled") or {}).values()}
                    hatch.append("//" if kept == {"torch"} else "")
                else:
                    ratio = r["cuda_graph_ms"]["megasim-cl"] / r["cuda_graph_ms"]["torch-cl"]
                    hatch.append("")
                xs.append(i + (j - 1) * w)
                ys.append(ratio)
            bars = ax.bar(xs, ys, w, color=colors[b])
            for bar, h in zip(bars, hatch):
                bar.set_hatch(h)
                bar.set_edgecolor("white" if h else bar.get_facecolor())
        ax.axhline(1.0, color="black", lw=0.9)
        ax.axhspan(0.98, 1.02, color="#dddddd", zorder=0)
        ax.set_xticks(range(len(nets)), nets)
        ax.set_title(f"{kind}: megasim / torch (below 1: megasim faster)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("forward time, megasim / torch")
    handles = [Patch(color=colors[b], label=f"batch {b}") for b in batches]
    handles += [Patch(facecolor=colors[1], hatch="//", edgecolor="white", label="settle kept torch's network"),
                Patch(color="#dddddd", label="torch ± 2% noise")]
    fig.legend(handles=handles, loc="upper center", ncol=5, fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.93))
    fig.suptitle("megasim.torch on the H200, fp32 (TF32 off), 2026-11-29", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.savefig(out / "torch_ratio.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
