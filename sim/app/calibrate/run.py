"""The two calibration commands end to end: `megasim calibrate` and `megasim validate`."""
from __future__ import annotations

import datetime as dt
import json
import math
import os
from dataclasses import replace
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from megasim.gpu.build import kernel_build_hash
from megasim.app.calibrate.corpus_eval import validate_corpus
from megasim.app.calibrate.replay_check import load_replay_inputs, validate_replay
from megasim.app.calibrate.target_reach import reach_section
from megasim.app.calibrate.fit import fit_compute_efficiency, fit_fused, fit_probes, hardware_overrides, work_cv_from_trace
from megasim.app.calibrate.fused_dram import USABLE_L2_FRACTION
from megasim.app.calibrate.jobs import progress as progress_bar
from megasim.app.calibrate.builds_fit import fit_builds
from megasim.app.calibrate.builds import CORPUS, PAPER, validate_builds
from megasim.app.calibrate.tensor_law import load_tensor_core, tensor_rates, tensor_stage
from megasim.app.calibrate.measurements import attach_graph_kernels, load_builds, load_runs
from megasim.app.calibrate.metrics import by_layer, simulators_pick, summarise
from megasim.app.calibrate.raw import (COMMITTED_RAW, check_heldout, check_raw, corpus_runs, load_corpus, present,
                                       load_micro, load_raw_trace, raw_paths)
from megasim.app.calibrate.uncertainty import Uncertainty
from megasim.app.calibrate.profile import CalibrationProfile, load_profile, profile_path, save_profile
from megasim.app.calibrate.validate import plot_scatter, predict_runs, simulated_records, write_report
from megasim.contract.errors import MegasimError
from megasim.io.files import existing_file
from megasim.contract.problem import OP_NAMES, Op
from megasim.app.catalog import SCENARIOS, is_spec_file, load_gpu
from megasim.contract.records import records_from_dicts


def traced_constants(spec, trace: dict | None, sample_path) -> tuple[dict, dict]:
    """Stage 1b, for the law `resident_sharing`: the megakernel's per-task cost from the GPU's own trace and
    the GEMM and output block laws from a trace sample (`trace_law`): their efficiency, step and fixed cycles,
    the GEMM's per body (the GEMM kernel's from the non-fused launches, the megakernel's from the fused ones),
    how blocks of other types share an SM with GEMMs (`NEIGHBOUR_READINGS`), and in what order a GEMM
    kernel's first wave ends (`end_order.stagger_reading`).
    Returns (model overrides, pinned task types)."""
    from megasim.app.calibrate.end_order import stagger_reading
    from megasim.app.calibrate.trace_law import (gemm_body_laws, gemm_law, graph_of, launches_of, load_sample,
                                                 NEIGHBOUR_READINGS, output_law, task_costs)
    if trace is None:
        raise MegasimError("--sharing resident takes the per-task cost from <gpu>_trace_resnet2.json; "
                           "the raw folder has none (--sharing jobs fits without per-block traces)")
    existing_file(sample_path or "", f"--sharing resident fits the GEMM from a trace sample: {sample_path}",
                  "no such file (--trace-sample PATH)")
    costs = task_costs(graph_of(trace), records_from_dicts(trace["records"]), spec.clock_mhz,
                       spec.tb_dispatch_latency_cycles)
    sample = load_sample(sample_path)
    peak = spec.fp32_flops_per_cycle_per_sm
    law = lambda fixed, step, eff, *_: {"compute_efficiency": round(eff, 4), "step_cycles": round(step, 1),  # noqa: E731
                                        "block_fixed_cycles": round(fixed, 1)}
    pinned = {Op.GEMM: law(*gemm_law(*sample, spec.clock_mhz, peak)),
              Op.OUTPUT_TRANSFORM: law(*output_law(*sample, spec.clock_mhz, peak))}
    meta, traces = sample
    bodies = {kind: {body: law(*fit) for body, fit in
                     gemm_body_laws(meta, launches_of(traces, kind), spec.clock_mhz, peak).items()}
              for kind in ("nonfused", "fused")}
    laws = {**NEIGHBOUR_READINGS, "first_wave_stagger": {"stagger": {"gemm": stagger_reading(meta, traces)}},
            "gemm_body_laws": bodies}
    return {"laws": list(laws), **laws, **costs}, pinned


def carried_revalidation(out, kernel_build: str | None, gpu: str | None = None) -> dict:
    """The replaced profile's `revalidated_builds` and `revalidation`, else the GPU's committed profile's, when
    it was fitted on measurements of the same kernel build: they say those measurements still hold for later
    builds, which a re-fit does not change (so a profile fitted afresh on the committed raw files is as current
    as the committed profile, and does not call itself stale)."""
    for path in (out, *([profile_path(gpu)] if gpu else [])):
        try:
            old = load_profile(path)
        except (MegasimError, TypeError):
            continue
        if kernel_build is not None and old.provenance.get("kernel_build") == kernel_build:
            return {k: old.provenance[k] for k in ("revalidated_builds", "revalidation") if k in old.provenance}
    return {}


def _provenance(files: list[Path], header: dict, out, gpu: str | None = None) -> dict:
    """The profile's [profile] section: the measurement files it was fitted on (those that exist), where and on
    which kernel build they were measured, today, and the replaced profile's revalidation where it applies."""
    shown = [str(p.relative_to(SCENARIOS.parent)) if p.is_absolute() and SCENARIOS.parent in p.parents else str(p)
             for p in files if p.exists()]
    return {"measurements": shown, "device": header.get("device", "?"),
            "measured_commit": header.get("git_commit", "?"),
            "kernel_build": header.get("kernel_build", kernel_build_hash()), "date": dt.date.today().isoformat(),
            **carried_revalidation(out, header.get("kernel_build"), gpu)}


def fit_profile(gpu_name: str, raw_dir, out, jobs: int = 2, log=print, sharing: str = "resident",
                trace_sample=None) -> CalibrationProfile:
    """Stages 1-5 on the raw measurements in `raw_dir` (4: what whole builds show, `builds_fit`; 5: the 3xTF32
    GEMM law over stage 4's warp body, `tensor_law`, where `<gpu>_tensor_core.json` exists); writes `out`.

    With `sharing = "resident"` (the law `resident_sharing`) the per-block traces give what the fit would
    otherwise search for: the megakernel's per-task cost and counter reads (from `<gpu>_trace_resnet2.json`, so
    stage 3 fits only the usable L2), the GEMM's constants (from `trace_sample`, by default `<gpu>_trace_sample.npz`)
    and the output transform's laws (the same sample's), so stage 2 fits the other transforms and the output's DRAM
    access efficiency alone (decisions.md, "The resident form", "The output transform from its block law"). A
    usable L2 read off DRAM counters is pinned (`fused_dram.USABLE_L2_FRACTION`): stage 3 then fits at most the
    overhead."""
    spec = load_gpu(gpu_name)
    paths = raw_paths(raw_dir, spec.name)
    check_raw(paths, spec.name, raw_dir, sharing == "resident", trace_sample is not None)
    micro = load_micro(paths["micro"])
    header, runs = load_runs(paths["runs"])
    corpus = corpus_runs(paths["corpus"])
    graphed = attach_graph_kernels(runs + corpus, paths["kernel_graph"])
    trace = load_raw_trace(paths["trace"], spec.sm_count) if present(paths["trace"]) else None
    builds, tensor, rates = _whole_build_inputs(paths, micro, sharing)
    log(f"{graphed} of {len(runs) + len(corpus)} runs have their non-fused kernels timed in a CUDA graph")
    hw, model = hardware_overrides(micro, spec)
    if trace is not None:
        model["block_work_cv"] = work_cv_from_trace(trace)
    pinned, stage3 = None, {"usable": (USABLE_L2_FRACTION,)}
    model["l2_usable_fraction"] = USABLE_L2_FRACTION
    if sharing == "resident":
        sample = Path(trace_sample) if trace_sample else paths["trace_sample"]
        traced, pinned = traced_constants(spec.with_model(**hw), trace, sample)
        model.update(traced)
        stage3["overheads"] = (traced["task_overhead_cycles"],)
        log(f"stage 1b (traces): {traced}; from {sample}: {({OP_NAMES[op]: law for op, law in pinned.items()})}")
    spec1 = spec.with_model(**hw, **model)
    log(f"stage 1 (hardware): {hw} {model}")
    with ProcessPoolExecutor(jobs) as pool, progress_bar("fitting", fit_probes()) as tick:
        # the bar counts stage 2's and 3's simulated probes against their budget; a task type that converges
        # early leaves it short of its end
        fitted, kernel_errors = fit_compute_efficiency(runs + corpus, spec1, pool=pool, log=log, tick=tick,
                                                       pinned=pinned)
        dram, step, fixed = (fitted.pop(k) for k in ("dram_access_efficiency", "step_cycles", "block_fixed_cycles"))
        eff = fitted
        log(f"stage 2: compute efficiency {eff}, DRAM access efficiency {dram}, step cycles {step}; "
            f"rms log error {kernel_errors}")
        spec2 = spec1.with_model(compute_efficiency={**spec1.model.compute_efficiency, **eff},
                                 dram_access_efficiency=dram, step_cycles=step, block_fixed_cycles=fixed)
        fused, err = fit_fused(runs + corpus, spec2, pool=pool, tick=tick, **stage3)
        log(f"stage 3 (megakernel): {fused}, rms log error {math.sqrt(err):.3f}")
        whole, later, used = _whole_builds(builds, tensor, paths, spec2.with_model(**fused), pool, log, rates)
    profile = CalibrationProfile(
        gpu=spec.name, hardware=hw,
        model={"laws": [law.name for law in spec1.model.laws], **model, "compute_efficiency": eff,
               "dram_access_efficiency": dram, "step_cycles": step, "block_fixed_cycles": fixed, **fused, **whole},
        provenance=_provenance([paths["micro"], paths["runs"], paths["corpus"], paths["kernel_graph"],
                                *([paths["trace"], sample] if pinned else []), *used],
                               header, out, spec.name) | _spec_named(gpu_name),
        fit={"stage2_kernel_rms_log_error": kernel_errors, "stage3_rms_log_error": round(math.sqrt(err), 4), **later})
    save_profile(profile, out)
    return profile


def _whole_build_inputs(paths: dict, micro: dict, sharing: str) -> tuple[list, list, dict | None]:
    """Stages 4 and 5's inputs, checked before any simulating: builds, 3xTF32 rows and the tensor rates they need."""
    builds = load_builds(paths["builds"])[1] if sharing == "resident" and present(paths["builds"]) else []
    tensor = load_tensor_core(paths["tensor_core"]) if builds and present(paths["tensor_core"]) else []
    return builds, tensor, (tensor_rates(micro, paths["micro"]) if tensor else None)


def _whole_builds(builds: list[dict], tensor: list[dict], paths: dict, spec, pool, log, rates=None
                  ) -> tuple[dict, dict, list]:
    """Stages 4 and 5: ([model] entries, [fit] entries, the raw files they read). The 3xTF32 law's efficiencies
    are ratios to the FFMA warp body's, so stage 5 fits over the warp body laws stage 4 fits (and runs only
    where there are builds)."""
    whole, stage4 = fit_builds(builds, spec, pool=pool, log=log)
    law, stage5 = tensor_stage(tensor, spec.with_model(**whole), pool, log, rates)
    files = [paths[k] for k, rows in (("builds", builds), ("tensor_core", tensor)) if rows]
    return {**whole, **law}, {**({"stage4_rms_log_error": stage4} if stage4 else {}), **stage5}, files


def _spec_named(gpu: str) -> dict:
    """A fit over a spec file (one `calibrate` wrote for a GPU megasim had none of) names it in [profile]."""
    return {"spec": str(Path(gpu).resolve())} if is_spec_file(gpu) else {}


def validate_paths(gpu: str | None, profile=None, measurements=None) -> tuple[Path, Path]:
    """(profile, measurements) for `megasim validate`: given paths win, else the GPU's committed ones."""
    if gpu is None and (profile is None or measurements is None):
        raise MegasimError("validate needs --gpu, or both --profile and --measurements")
    if gpu is not None:
        name = load_gpu(gpu).name
        profile = profile or profile_path(name)
        measurements = measurements or raw_paths(COMMITTED_RAW, name)["runs"]
    for path in (profile, measurements):
        existing_file(path)
    return _shown(Path(profile)), _shown(Path(measurements))


def _shown(path: Path) -> Path:
    """Relative to the working directory when inside it, so reports name the paths a reader would type."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def measured_gpu(doc: dict) -> str | None:
    """The short name ("h200") of the GPU a runs file was measured on, from its header; None if unsaid."""
    from megasim.gpu.microbench_stats import gpu_short_name
    device = doc.get("header", {}).get("device") if isinstance(doc.get("header"), dict) else None
    return gpu_short_name(device) if isinstance(device, str) and device else None


def check_same_gpu(profile, profile_path, doc: dict, measurements, allow_other: bool = False) -> bool:
    """Whether the runs were measured on the profile's GPU (its short name, or for a GPU named by its user the
    device the profile was fitted on); refuse the mix unless `allow_other` (a transfer study), where the MAPE is
    another question: how a profile carries to another GPU."""
    measured = measured_gpu(doc)
    device = doc.get("header", {}).get("device")
    if measured is None or measured == profile.gpu.lower() or device == profile.provenance.get("device"):
        return True
    if not allow_other:
        raise MegasimError(f"{profile_path} is the {profile.gpu} profile but {measurements} was measured on "
                           f"{doc['header']['device']}; give that GPU's profile, or --allow-other-gpu for a "
                           "transfer study")
    return False


def _committed(profile, measurements, gpu: str) -> bool:
    """Whether these are the GPU's committed profile and runs (package data), as `validate --gpu` takes them."""
    return (Path(profile).resolve() == profile_path(gpu).resolve()
            and Path(measurements).resolve() == raw_paths(COMMITTED_RAW, gpu)["runs"].resolve())


def _record_intervals(profile, profile_path, interval, same_gpu: bool, log, out) -> None:
    """Store the held-out intervals in the profile, when they are its own GPU's and it can be written.

    A profile that is package data (scenarios/calibrations/<gpu>.toml) is rewritten only with the committed
    report (`--out docs` in a checkout), whose committed predictions its intervals must match; any other
    `validate` of it writes only under its --out. A profile of one's own (`calibrate`'s) gets its intervals here."""
    if interval is None or interval.to_dict() == profile.uncertainty:
        return
    packaged = SCENARIOS.resolve() in Path(profile_path).resolve().parents
    if not same_gpu:
        log(f"not recording intervals from another GPU's runs in {profile_path}")
    elif packaged and Path(out).resolve() != (SCENARIOS.parent / "docs").resolve():
        log(f"the held-out intervals differ from {profile_path}'s [uncertainty]; left as they are (package data: "
            f"`megasim validate --gpu {profile.gpu} --out docs` refreshes them with the committed report)")
    elif not os.access(profile_path, os.W_OK):
        log(f"{profile_path} is read-only: its intervals are left as they were")
    else:
        save_profile(replace(profile, uncertainty=interval.to_dict()), profile_path)
        log(f"recorded the held-out {interval.coverage:.0%} intervals in {profile_path}")


def validate_profile(profile_path, measurements, out_dir="out/validate", jobs: int = 2, log=print, report=None,
                     allow_other_gpu: bool = False, corpus: bool = False, progress: bool = True) -> dict:
    """Everything is read and checked before the minutes of simulation: the profile, the runs, the trace, the
    micro-benchmarks, the corpus (with `corpus`, where the file exists) and the trace sample replayed.
    `progress`: a bar on stderr (on a terminal) while the runs simulate."""
    if not isinstance(jobs, int) or jobs < 1:
        raise MegasimError(f"--jobs must be a positive number of worker processes, got {jobs}")
    profile = load_profile(profile_path)
    spec = profile.apply(profile.base_spec())
    header, runs = load_runs(measurements)
    check_heldout(runs, measurements)
    same_gpu = check_same_gpu(profile, profile_path, {"header": header}, measurements, allow_other_gpu)
    gpu = profile.gpu
    raw = Path(measurements).parent
    paths = raw_paths(raw, gpu)
    attach_graph_kernels(runs, paths["kernel_graph"])
    trace = load_raw_trace(paths["trace"], spec.sm_count) if present(paths["trace"]) else None
    builds = {k: load_builds(paths[k])[1] for k in ("builds", "corpus_builds")
              if present(paths[k]) and (corpus or k == "builds")}
    micro = load_micro(paths["micro"]) if present(paths["micro"]) else None
    corpus_lines = load_corpus(paths["corpus"]) if corpus and present(paths["corpus"]) else None
    replay_inputs = load_replay_inputs(raw, gpu) if same_gpu else None
    rows = predict_runs(runs, spec, jobs, progress)
    summary = summarise(rows)
    interval = Uncertainty.from_rows(rows)
    _record_intervals(profile, profile_path, interval, same_gpu, log, out_dir)
    out = Path(out_dir)
    report_path = Path(report) if report else out / "calibration.md"
    figures = {"scatter": out / f"figures/calibration_scatter_{gpu}.png"}
    plot_scatter(rows, figures["scatter"], gpu)
    extra = _overlay_section(trace, spec, out, gpu, report_path, figures) if trace is not None else []
    corpus_rows = None
    if corpus_lines is not None:
        lines, corpus_rows = validate_corpus(spec, gpu, paths["corpus"], out, jobs, log, progress, corpus_lines)
        extra += lines
    replay, replayed = (validate_replay(spec, gpu, raw, out, log, progress, replay_inputs) if replay_inputs
                        else ([], None))
    extra += replay
    for kind, timed in builds.items():
        extra += validate_builds(timed, spec, jobs, out / "results" / "calibration" / f"{kind}_predictions_{gpu}.json",
                                 str(profile_path), CORPUS if kind == "corpus_builds" else PAPER)
    extra += (_kernel_section(rows) + _winner_margins(rows, summary) + reach_section(rows, corpus_rows)
              + _interval_section(interval) + _profile_section(profile))
    if micro is not None:
        extra += _dispatch_section(micro, spec)
    from megasim.io.writing import write_then_rename
    with write_then_rename(out / "results" / "calibration" / f"calibration_predictions_{gpu}.json") as tmp:
        tmp.write_text(json.dumps({"profile": str(profile_path), "measurements": str(measurements),
                                   "summary": summary, "rows": rows}, indent=1, default=float))
    command = ((f"megasim validate --gpu {gpu}" if _committed(profile_path, measurements, gpu) else
                f"megasim validate --profile {profile_path} --measurements {measurements}") + f" --out {out_dir}"
               + (f" --report {report}" if report else "") + (" --allow-other-gpu" if not same_gpu else "")
               + (" --no-corpus" if not corpus and present(paths["corpus"]) else ""))
    write_report(report_path, gpu, command, summary, rows, {k: _link(v, report_path) for k, v in figures.items()},
                 extra)
    log(f"wrote {report_path}")
    if corpus_rows:
        from megasim.app.calibrate.corpus_eval import corpus_summary
        summary = {**summary, "corpus": corpus_summary(corpus_rows)["heldout"]}
    return {**summary, "replay": replayed} if replayed else summary


def _overlay_section(trace: dict, spec, out: Path, gpu: str, report_path: Path, figures: dict) -> list[str]:
    """The traced launch's per-block timeline beside its simulation (a figure added to `figures`)."""
    from megasim.app.overlay import plot_overlay
    sim_rec = simulated_records({**trace, "split": "trace"}, spec)
    figures["overlay"] = out / f"figures/calibration_trace_{gpu}.png"
    plot_overlay(records_from_dicts(trace["records"]), sim_rec, figures["overlay"], num_sms=spec.sm_count)
    return [f"## Per-block timeline: {trace['layer']['name']}, measured against simulated", "",
            f"![trace overlay]({_link(figures['overlay'], report_path)})", ""]


def _link(figure: Path, report: Path) -> str:
    """`figure` as the report links it: relative to the report's folder."""
    return Path(os.path.relpath(figure, report.parent)).as_posix()


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
    graphed = any(r.get("kernels_timed") == "graph" for r in rows)
    how = ("Measured inside one CUDA graph as prefix differences (the first kernel carries the graph's launch), "
           "predicted as stage 2 fits them: each kernel simulated alone, the first with the sequence's first "
           "launch and the others with one launch gap" if graphed else
           "Measured between events with each launch issued from Python, which on short kernels also times the host")
    lines = ["## Non-fused kernels in the pipeline: measured / predicted (us)", "",
             how + "; the last column is the four in one graph.", "",
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
    layers = by_layer(rows)
    for name, w in sorted(summary["winner"].items()):
        pick = simulators_pick(layers[name])
        lines.append(f"| {name} | {pick['nonfused_us'] / pick['fused_us'] - 1:+.1%} | "
                     f"{pick['pred_nonfused_us'] / pick['pred_fused_us'] - 1:+.1%} | {'right' if w['right'] else 'wrong'} |")
    return lines + [""]


def _profile_section(profile) -> list[str]:
    warned = [f"**Warning:** {w}." for w in profile.warnings()]
    lines = ["## The fitted profile", "", f"Fitted on {', '.join(profile.provenance.get('measurements', []))} "
             f"(device {profile.provenance.get('device')}, commit {profile.provenance.get('measured_commit')}, "
             f"kernel build {profile.provenance.get('kernel_build')}).", "", *warned, *([""] if warned else []),
             "| parameter | value |", "|---|---|"]
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
