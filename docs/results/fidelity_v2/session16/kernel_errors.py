"""Session 16: the log error of one non-fused kernel under a spec, on every graph-timed shape of a split
(`scenarios/calibrations/raw/h200_kernel_graph_times.jsonl`), as the studies here grid and print it."""
import json

import numpy as np

from megasim.app.calibrate.predict import predict_kernel_in_graph

SHAPES = [json.loads(s) for s in open("scenarios/calibrations/raw/h200_kernel_graph_times.jsonl")]


def errors(spec, op, split) -> list:
    """[(variant, log(predicted / measured))] of kernel `op` on the split's shapes."""
    out = []
    for s in SHAPES:
        if s["split"] == split:
            run = {"layer": s["layer"], "variant": s["variant"], "partition": s["partition"]}
            out.append((s["variant"], np.log(predict_kernel_in_graph(run, op, spec) / s["graph_kernels_us"][op])))
    return out


def rms(errs, v=None) -> tuple[float, float]:
    """(rms, median) of the errors, of one variant's if `v` is given."""
    e = np.array([x for w, x in errs if v is None or w == v])
    return float(np.sqrt(np.mean(e ** 2))), float(np.median(e))


def show(tag, errs, width: int = 36) -> None:
    cols = "  ".join(f"F({v}) {rms(errs, v)[0]:.3f}/{rms(errs, v)[1]:+.3f}" for v in (2, 4, 6))
    print(f"{tag:{width}s} all {rms(errs)[0]:.3f}/{rms(errs)[1]:+.3f}  {cols}", flush=True)
