"""ResNet-1 under D_IG = 128 and 512, traced on the H200 against a profile: input transforms and GEMMs working per
SM over the first 100 us, and GEMMs resident but waiting (docs/figures/resnet1_head_h200.png).

    python docs/results/fidelity_v2/session13/head_plot.py PROFILE OUT.png
"""
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from megasim.app.calibrate.predict import graph_of, mapping_of  # noqa: E402
from megasim.app.calibrate.profile import load_profile  # noqa: E402
from megasim.app.calibrate.replay_check import RUN_KEYS  # noqa: E402
from megasim.app.calibrate.trace_law import load_sample  # noqa: E402
from megasim.app.catalog import load_gpu  # noqa: E402
from megasim.contract.interpreter import RunConfig  # noqa: E402
from megasim.contract.problem import Op  # noqa: E402
from megasim.engine.interpreter import SimpyInterpreter  # noqa: E402

T = np.arange(0.0, 100.0, 0.5)


def per_sm(rec, op, first, second):
    """Blocks of `op` per SM between their `first` and `second` stamps, at each time of T."""
    s = rec["op"] == op
    t0 = rec["start_us"].min()
    a, b = rec[first][s] - t0, rec[second][s] - t0
    return np.array([((a <= t) & (b > t)).sum() for t in T]) / 132


def main(profile, out):
    meta, tr = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    spec = load_profile(profile).apply(load_gpu("h200"))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    for ax, case, title in zip(axes, ("ResNet-1-dig128", "ResNet-1"), ("D_IG = 128", "D_IG = 512")):
        run = {k: meta[case][k] for k in RUN_KEYS if k in meta[case]}
        model = SimpyInterpreter(spec).run(graph_of(run), mapping_of(run), RunConfig()).records
        for rec, style, who in ((tr[case]["fused"], "-", "H200 trace"), (model, "--", "model")):
            ax.plot(T, per_sm(rec, Op.INPUT_TRANSFORM, "ready_us", "end_us"), style, color="tab:blue",
                    label=f"input transforms working ({who})")
            ax.plot(T, per_sm(rec, Op.GEMM, "ready_us", "end_us"), style, color="tab:green",
                    label=f"GEMMs working ({who})")
            ax.plot(T, per_sm(rec, Op.GEMM, "start_us", "ready_us"), style, color="0.6",
                    label=f"GEMMs waiting ({who})")
        ax.set_title(f"ResNet-1, {title} (D_GO 512, M 4)")
        ax.set_xlabel("time from the launch's first block (us)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("blocks per SM")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle("The first input transforms at D_IG = 128 average one per SM, but on the H200 land on about 50 "
                 "SMs, up to four each (session 14),\nand take 37.6 us there, 27.0 in the model, which runs them one "
                 "per SM; the GEMMs behind them start 11 us earlier in the model\n(solid: H200 trace; dashed: "
                 + profile.split('/')[-2] + " profile)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
