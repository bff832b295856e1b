"""The two calibration commands end to end: `megasim calibrate` and `megasim validate`."""
from __future__ import annotations

import datetime as dt
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sim.calibrate.build import kernel_build_hash
from sim.calibrate.fit import fit_compute_efficiency, fit_fused, hardware_overrides, work_cv_from_trace
from sim.calibrate.metrics import summarise
from sim.calibrate.profile import CalibrationProfile, load_profile, save_profile
from sim.calibrate.validate import plot_scatter, predict_runs, read_json, simulated_records, write_report
from sim.errors import MegasimError
from sim.spec import SCENARIOS, load_gpu
from sim.trace import records_from_dicts


def raw_paths(raw_dir, gpu: str) -> dict:
    raw = Path(raw_dir)
    return {"micro": raw / f"{gpu}_micro.json", "runs": raw / f"{gpu}_runs.json",
            "trace": raw / f"{gpu}_trace_resnet2.json"}


def fit_profile(gpu_name: str, raw_dir, out, jobs: int = 2, log=print) -> CalibrationProfile:
    """Stages 1-3 on the raw measurements in `raw_dir`; writes the profile to `out`."""
    spec = load_gpu(gpu_name)
    paths = raw_paths(raw_dir, spec.name)
    micro, runs_doc = read_json(paths["micro"]), read_json(paths["runs"])
    runs = runs_doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise MegasimError(f"{paths['runs']}: no runs")
    hw, model = hardware_overrides(micro, spec)
    if paths["trace"].exists():
        model["block_work_cv"] = work_cv_from_trace(read_json(paths["trace"]))
    spec1 = spec.with_model(**hw, **model)
    log(f"stage 1 (hardware): {hw} {model}")
    with ProcessPoolExecutor(jobs) as pool:
        fitted, kernel_errors = fit_compute_efficiency(runs, spec1, pool=pool)
        half = fitted.pop("gemm_half_efficiency_channels", 0.0)
        block_bw = fitted.pop("block_bytes_per_cycle")
        eff = fitted
        log(f"stage 2 (compute efficiency): {eff}, GEMM half-efficiency at C = {half}, block bytes/cycle "
            f"{block_bw}; rms log error {kernel_errors}")
        spec2 = spec1.with_model(compute_efficiency={**spec1.compute_efficiency, **eff},
                                 gemm_half_efficiency_channels=half, block_bytes_per_cycle=block_bw)
        fused, err = fit_fused(runs, spec2, pool=pool)
    log(f"stage 3 (megakernel): {fused}, rms log error {math.sqrt(err):.3f}")
    header = runs_doc.get("header", {})
    profile = CalibrationProfile(
        gpu=spec.name, hardware=hw,
        model={**model, "compute_efficiency": eff, "gemm_half_efficiency_channels": half,
               "block_bytes_per_cycle": block_bw, **fused},
        provenance={"measurements": [str(p.relative_to(SCENARIOS.parent)) if p.is_absolute() and SCENARIOS.parent in p.parents
                                     else str(p) for p in (paths["micro"], paths["runs"])],
                    "device": header.get("device", "?"), "measured_commit": header.get("git_commit", "?"),
                    "kernel_build": header.get("kernel_build", kernel_build_hash()),
                    "date": dt.date.today().isoformat()},
        fit={"stage2_kernel_rms_log_error": kernel_errors, "stage3_rms_log_error": round(math.sqrt(err), 4)})
    save_profile(profile, out)
    return profile


def validate(profile_path, measurements, out_dir="docs", jobs: int = 2, log=print) -> dict:
    profile = load_profile(profile_path)
    spec = profile.apply(load_gpu(profile.gpu))
    doc = read_json(measurements)
    rows = predict_runs(doc["runs"], spec, jobs)
    summary = summarise(rows)
    out = Path(out_dir)
    gpu = profile.gpu
    figures = {"scatter": f"figures/calibration_scatter_{gpu}.png"}
    plot_scatter(rows, out / figures["scatter"], gpu)
    extra = []
    trace_path = raw_paths(Path(measurements).parent, gpu)["trace"]
    if trace_path.exists():
        from sim.plot import plot_timeline_pair
        trace = read_json(trace_path)
        run = {**trace, "split": "trace"}
        sim_rec = simulated_records(run, spec, "gpc_interleaved")
        figures["overlay"] = f"figures/calibration_trace_{gpu}.png"
        plot_timeline_pair(sim_rec, records_from_dicts(trace["records"]), out / figures["overlay"])
        extra += [f"## Per-block timeline: {trace['layer']['name']}, measured against simulated", "",
                  f"![trace overlay]({figures['overlay']})", ""]
    import json
    from sim.atomic import atomic_path
    with atomic_path(out / "results" / f"calibration_predictions_{gpu}.json") as tmp:
        tmp.write_text(json.dumps({"profile": str(profile_path), "measurements": str(measurements),
                                   "summary": summary, "rows": rows}, indent=1, default=float))
    write_report(out / "calibration.md", gpu, str(profile_path), summary, rows, figures, extra)
    log(f"wrote {out / 'calibration.md'}")
    return summary
