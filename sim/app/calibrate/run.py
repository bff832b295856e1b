"""The two calibration commands end to end: `megasim calibrate` and `megasim validate`."""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from megasim.gpu.backend import kernel_build_hash
from megasim.app.calibrate.fit import fit_compute_efficiency, fit_fused, hardware_overrides, work_cv_from_trace
from megasim.app.calibrate.metrics import summarise
from megasim.app.calibrate.uncertainty import Uncertainty
from megasim.app.calibrate.profile import CalibrationProfile, load_profile, profile_path, save_profile
from megasim.app.calibrate.validate import plot_scatter, predict_runs, simulated_records, write_report
from megasim.contract.errors import MegasimError
from megasim.contract.files import read_json
from megasim.app.catalog import SCENARIOS, load_gpu
from megasim.contract.records import records_from_dicts


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


def validate_paths(gpu: str | None, profile=None, measurements=None) -> tuple[Path, Path]:
    """(profile, measurements) for `megasim validate`: given paths win, else the GPU's committed ones."""
    if gpu is None and (profile is None or measurements is None):
        raise MegasimError("validate needs --gpu, or both --profile and --measurements")
    if gpu is not None:
        name = load_gpu(gpu).name
        profile = profile or profile_path(name)
        measurements = measurements or raw_paths(SCENARIOS / "calibrations" / "raw", name)["runs"]
    for path in (profile, measurements):
        if not Path(path).is_file():
            raise MegasimError(f"{path}: no such file")
    return _shown(Path(profile)), _shown(Path(measurements))


def _shown(path: Path) -> Path:
    """Relative to the working directory when inside it, so reports name the paths a reader would type."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def validate_profile(profile_path, measurements, out_dir="docs", jobs: int = 2, log=print, report=None) -> dict:
    profile = load_profile(profile_path)
    spec = profile.apply(load_gpu(profile.gpu))
    doc = read_json(measurements)
    rows = predict_runs(doc["runs"], spec, jobs)
    summary = summarise(rows)
    interval = Uncertainty.from_rows(rows)
    if interval is not None and interval.to_dict() != profile.uncertainty:
        save_profile(replace(profile, uncertainty=interval.to_dict()), profile_path)
        log(f"recorded the held-out {interval.coverage:.0%} intervals in {profile_path}")
    out = Path(out_dir)
    gpu = profile.gpu
    figures = {"scatter": f"figures/calibration_scatter_{gpu}.png"}
    plot_scatter(rows, out / figures["scatter"], gpu)
    extra = []
    trace_path = raw_paths(Path(measurements).parent, gpu)["trace"]
    if trace_path.exists():
        from megasim.app.overlay import plot_overlay
        trace = read_json(trace_path)
        run = {**trace, "split": "trace"}
        sim_rec = simulated_records(run, spec, "gpc_interleaved")
        figures["overlay"] = f"figures/calibration_trace_{gpu}.png"
        plot_overlay(records_from_dicts(trace["records"]), sim_rec, out / figures["overlay"], num_sms=spec.sm_count)
        extra += [f"## Per-block timeline: {trace['layer']['name']}, measured against simulated", "",
                  f"![trace overlay]({figures['overlay']})", ""]
    extra += _kernel_section(rows) + _winner_margins(rows, summary) + _interval_section(interval) + _profile_section(profile)
    micro_path = raw_paths(Path(measurements).parent, gpu)["micro"]
    if micro_path.exists():
        extra += _dispatch_section(read_json(micro_path), spec)
    import json
    from megasim.contract.files import write_then_rename
    with write_then_rename(out / "results" / "calibration" / f"calibration_predictions_{gpu}.json") as tmp:
        tmp.write_text(json.dumps({"profile": str(profile_path), "measurements": str(measurements),
                                   "summary": summary, "rows": rows}, indent=1, default=float))
    option = f" --report {report}" if report else ""
    report = Path(report) if report else out / "calibration.md"
    write_report(report, gpu, str(profile_path), summary, rows, figures, extra, option)
    log(f"wrote {report}")
    return summary


def _interval_section(interval) -> list[str]:
    if interval is None:
        return []
    u = interval
    return [f"## Prediction intervals ({u.coverage:.0%}, from the {u.heldout_runs} held-out runs)", "",
            "`megasim simulate` multiplies its predictions by these measured / predicted percentiles, and calls "
            "the fused-vs-non-fused winner only when the margin's interval excludes zero (else \"too close to "
            "call\"). They are stored in the profile's [uncertainty] section.", "",
            "| | low | high |", "|---|---|---|",
            f"| fused, measured / predicted | {u.fused_ratio[0]:.3f} | {u.fused_ratio[1]:.3f} |",
            f"| non-fused, measured / predicted (one per layer) | {u.nonfused_ratio[0]:.3f} | {u.nonfused_ratio[1]:.3f} |",
            f"| fusion margin, measured - predicted (points) | {100 * u.margin_error[0]:+.1f} | "
            f"{100 * u.margin_error[1]:+.1f} |", ""]


def _kernel_section(rows) -> list[str]:
    lines = ["## Non-fused kernels, each timed alone: measured / predicted (us)", "",
             "Each alone includes its launch as the events see it; the last column is the four in one graph.", "",
             "| layer | split | filter | input | GEMM | output | four kernels in a graph |", "|---|---|---|---|---|---|---|"]
    seen = set()
    for r in rows:
        if r["layer"] in seen or not r.get("nonfused_kernels_us"):
            continue
        seen.add(r["layer"])
        cells = [f"{m:.1f} / {p:.1f}" for m, p in zip(r["nonfused_kernels_us"], r["pred_kernels_us"])]
        lines.append(f"| {r['layer']} | {r['split']} | " + " | ".join(cells)
                     + f" | {r['nonfused_us']:.1f} / {r['pred_nonfused_us']:.1f} |")
    return lines + [""]


def _winner_margins(rows, summary) -> list[str]:
    lines = ["## How close the fused-vs-non-fused calls are", "",
             "Measured margin: non-fused / fused - 1 under the simulator's pick (positive: fusion wins).", "",
             "| layer | measured margin | predicted margin | call |", "|---|---|---|---|"]
    for name, w in sorted(summary["winner"].items()):
        pick = min((r for r in rows if r["layer"] == name), key=lambda r: r["pred_fused_us"])
        lines.append(f"| {name} | {pick['nonfused_us'] / pick['fused_us'] - 1:+.1%} | "
                     f"{pick['pred_nonfused_us'] / pick['pred_fused_us'] - 1:+.1%} | {'right' if w['right'] else 'wrong'} |")
    return lines + [""]


def _profile_section(profile) -> list[str]:
    lines = ["## The fitted profile", "", f"Fitted on {', '.join(profile.provenance.get('measurements', []))} "
             f"(device {profile.provenance.get('device')}, commit {profile.provenance.get('measured_commit')}, "
             f"kernel build {profile.provenance.get('kernel_build')}).", "", "| parameter | value |", "|---|---|"]
    for section in (profile.hardware, profile.model, profile.fit):
        lines += [f"| `{k}` | {v} |" for k, v in section.items()]
    return lines + [""]


def _dispatch_section(micro: dict, spec) -> list[str]:
    from megasim.engine.dispatch.gpc_interleaved import first_wave_order
    d = micro.get("dispatch_summary", {})
    model_wave = first_wave_order(spec.sm_count, spec.sms_per_gpc, spec.first_wave_lead_sms)[:24]
    lines = ["## Block dispatch: measured vs modelled", "",
             "| | measured | modelled |", "|---|---|---|",
             f"| start order vs logical order, Spearman | {d.get('spearman_min', float('nan')):.4f} (vs blockIdx) | "
             "1 (the megakernel's ticket makes start order the logical order) |",
             f"| largest start displacement (blocks) | {d.get('max_displacement', '-')} (vs blockIdx) | 0 |",
             f"| freed slot to next block start | {d.get('latency_cycles', '-')} cycles | "
             f"{spec.tb_dispatch_latency_cycles} cycles |",
             f"| dispatch rate | {d.get('blocks_per_us', float('nan')):.0f} blocks/us | "
             f"{spec.clock_mhz / spec.tb_dispatch_interval_cycles:.0f} blocks/us |"]
    waves = [w for w in micro.get("dispatch", []) if w.get("first_wave_smids")]
    if waves:
        lines.append(f"| first 24 SMs of the first wave | {waves[0]['first_wave_smids'][:24]} | "
                     f"{model_wave} (`gpc_interleaved`) |")
    return lines + [""]
