"""Each non-fused kernel alone, predicted against measured, on every corpus shape: where the model's physics is off.

    python docs/results/fidelity_v2/kernel_residuals.py [GPU] [PROFILE.toml]   # writes kernel_residuals_<gpu>.json
"""
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[2] / "scenarios" / "calibrations" / "raw"


def _predict(job):
    from megasim.app.calibrate.predict import graph_of, predict_kernel
    from megasim.contract.problem import Op
    line, spec = job
    run = line["runs"][0]
    g = graph_of(run)
    geo = g.geometry
    return {"shape": line["shape"], "split": line["split"], "layer": run["layer"], "variant": run["variant"],
            "tasks": [int(len(g.tasks_of(op))) for op in Op],
            "gflop": [float(g.flops[g.tasks_of(op)].sum()) / 1e9 for op in Op],
            "measured_us": run["nonfused_kernels_us"],
            "pred_us": [predict_kernel(run, op, spec) for op in Op],
            "n_g": geo.n_g, "nonfused_us": run["nonfused_us"]}


def main(gpu="h200", profile=None):
    from megasim.app.calibrate.profile import load_profile, profile_path
    from megasim.app.catalog import load_gpu
    spec = load_profile(profile or profile_path(gpu)).apply(load_gpu(gpu))
    lines = [json.loads(l) for l in (RAW / f"{gpu}_corpus.jsonl").read_text().splitlines() if l.strip()]
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(_predict, [(l, spec) for l in lines if l["runs"]]))
    (HERE / f"kernel_residuals_{gpu}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])
