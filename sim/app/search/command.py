"""`megasim search`: resolve the problem and the space, run the search, write and print what it found.

Everything that can be refused is checked before a folder is made or a
worker started (the flags, the layer, the space); the output folder and a
SQLite storage's folder are then locked for the whole run
(`lock.locked_outputs`). `--network` (`network.py`) runs `search_layer`
once per distinct layer of a network, on one shared executor.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from megasim.contract.errors import MegasimError
from megasim.contract.resources import GEMM_BODIES, PRECISIONS, check_precision_body

STATUSES = ("ok", "rejected", "failed", "interrupted")


@dataclass
class Found:
    """One layer's search and what it wrote."""

    problem: object
    space: object
    result: object
    table: list
    header: dict
    out: Path
    elapsed: float
    written: list = field(default_factory=list)

    @property
    def best(self) -> dict | None:
        return next((r for r in self.table if r["status"] == "ok"), None)


def check_args(args):
    """The search config, once every flag has been checked; optuna present."""
    from megasim.app.search.runner import SearchConfig, check_config, require_optuna
    from megasim.app.search.store import durable_url
    if args.network and (args.layer or args.shape):
        raise MegasimError("give --network or --layer/--shape, not both")
    if args.validate_top is not None:
        if args.network:
            raise MegasimError("--validate-top measures one layer's candidates; it does not take --network")
        if args.validate_top < 1:
            raise MegasimError(f"--validate-top must be >= 1, got {args.validate_top}")
    config = SearchConfig(method=args.method, budget=args.budget, jobs=args.jobs, scheduler=args.scheduler,
                          seed=args.seed, progress=not args.quiet)
    check_config(config)
    if args.storage and durable_url(args.storage) is None:
        raise MegasimError(f"--storage {args.storage!r} keeps the study in memory, so nothing resumes; leave "
                           "--storage out (the output folder's own journal resumes) or give sqlite:///PATH")
    require_optuna()
    return config


PIN_FLAGS = ("launch", "variant", "mode", "gemm", "precision")  # `--NAME V` pins one axis of the decision space


def _overrides(args) -> dict:
    """`--space` lists, with `--launch`, `--variant`, `--mode`, `--gemm` and `--precision` as one-value lists (the
    same pin, said shorter)."""
    from megasim.app.search.space import parse_overrides
    overrides = parse_overrides(args.space)
    for name, value in ((n, getattr(args, n, None)) for n in PIN_FLAGS):
        if value is None:
            continue
        if name in overrides:
            raise MegasimError(f"--{name} and --space {name}=... both given; use one")
        overrides[name] = (value,)
    return overrides


def precision_space(args, gpu) -> dict:
    """The flags' space, with every precision searched where the model can predict them (a `gemm_precision`
    law, which calibration fits where the GPU has 3xTF32 measurements) and none was pinned; a precision it cannot
    predict is refused. A precision no searched GEMM body runs (3xTF32 where `--gemm generic` is pinned) is left
    out: each of its points would only be rejected."""
    from megasim.engine.blocks import predicted_precisions
    overrides = _overrides(args)
    predicted = predicted_precisions(gpu.model)
    asked = [p for p in overrides.get("precision", ()) if p in PRECISIONS and p not in predicted]
    if asked:
        raise MegasimError(f"precision {asked[0]!r} needs a model with a gemm_precision law (laws = "
                           "[\"tensor_core_gemm\"]); this one has none")
    if "precision" not in overrides:
        runnable = tuple(p for p in predicted if any(_runs(g, p) for g in overrides.get("gemm", GEMM_BODIES)))
        if len(runnable) > 1:
            overrides["precision"] = runnable
    return overrides


def _runs(gemm: str, precision: str) -> bool:
    try:
        check_precision_body(gemm, precision)
    except MegasimError:
        return False
    return True


def prepare(layer, args, gpu, intervals: dict | None = None):
    """(problem, space) of one layer: the GPU's partition for it as the base, the flags' space on top;
    refused here, before anything starts, if the space holds no legal point for this layer."""
    from megasim.app.catalog import partition_for
    from megasim.app.search.objective import Problem
    from megasim.app.search.space import build_space, legal_points
    space = build_space(args.strategy, partition_for(layer, gpu.name, args.partition), precision_space(args, gpu),
                        layer)
    legal, example = legal_points(space, layer, gpu, limit=0)
    if legal == 0:
        raise MegasimError(f"{layer.name}: the search space has no legal point ({space.size} points; e.g. {example})")
    return Problem.at_default(layer, gpu, args.strategy, space, intervals), space  # each point brings its own build


def search_layer(problem, space, config, storage: str, out: Path, model_note: str, executor=None,
                 intervals: dict | None = None) -> Found:
    """Run one layer's search and write its table, best.json and heatmaps into `out`.

    A search that ends with nothing simulated (every evaluation failed or was rejected) is refused with
    the first failure's reason, and writes nothing: no table, and no storage file if this run made it.
    """
    from megasim.app.search import outputs
    from megasim.app.search.heatmaps import write_heatmaps
    from megasim.app.search.runner import run_search
    from megasim.app.search.store import storage_file
    made = storage_file(storage)
    made = made if made is not None and not made.exists() else None
    t0 = time.perf_counter()
    result = run_search(problem, space, replace(config, storage=storage), executor)
    elapsed = time.perf_counter() - t0
    why = nothing_simulated(result)
    if why:
        _remove_store(made)
        raise MegasimError(f"{problem.layer.name}: {why}")
    layer, values = problem.layer, {p.name: p.values for p in space.params}
    header = {"layer": {"name": layer.name, "n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "k": layer.k},
              "launches": list(values["launch"]), "variants": list(values["variant"]), "modes": list(values["mode"]),
              "gemms": list(values["gemm"]), "gpu": problem.gpu.name,
              "model": model_note, "strategy": space.strategy, "method": config.method, "budget": result.budget,
              "study": result.study_name, "storage": storage, "space": space.describe(),
              "paper_default": result.reference or {}, "nonfused_us_by_variant_partition_gemm": result.nonfused,
              "elapsed_s": elapsed, "interrupted": result.interrupted}
    found = Found(problem, space, result, outputs.rows(result, space), header, out, elapsed)
    header["fusion_margin"] = outputs.fusion_margin(found.table, intervals)
    found.written += outputs.write_table(found.table, header, out)
    if found.best:
        found.written.append(outputs.write_best(problem, space, found.best, out, header))
        found.written += write_heatmaps(found.table, space, out, layer.name, problem.gpu.name, result.reference or {})
    return found


def nothing_simulated(result) -> str | None:
    """Why a finished search has no result: its evaluations (this run's and any earlier), none of which
    simulated, and the first failure's reason (else the first rejection's); None where one did, or the
    run was interrupted (what finished is kept for the next run)."""
    from megasim.app.search.loop import outcome
    trials = sorted(result.trials, key=lambda t: t.number)
    kinds = [outcome(t) for t in trials]
    if result.interrupted or not trials or "ok" in kinds:
        return None
    failed = [t.user_attrs.get("error", "") for t, k in zip(trials, kinds) if k == "failed"]
    rejected = [t.user_attrs.get("rejected", "") for t, k in zip(trials, kinds) if k == "rejected"]
    if not failed and not rejected:
        return None
    first = (failed or rejected)[0].removeprefix("MegasimError: ")
    return (f"none of its {len(trials)} evaluations simulated ({len(failed)} failed, {len(rejected)} rejected); "
            f"the first {'failure' if failed else 'rejection'}: {first}")


def _remove_store(path: Path | None) -> None:
    """Delete a storage file this run created (with SQLite's side files), so a refused search leaves none."""
    if path is None:
        return
    for p in (path, *(path.with_name(path.name + s) for s in ("-journal", "-wal", "-shm"))):
        p.unlink(missing_ok=True)


def _point_text(row: dict, space) -> str:
    """The searched parameters of a row, and its build's axes even where they are pinned."""
    return " ".join(f"{p.name}={row[p.name]}" for p in space.params if p.kind == "problem" or len(p.values) > 1)


def counts_line(found: Found) -> str:
    """How many evaluations, of which kind; interrupted trials are counted apart (not in the budget)."""
    table = found.table
    n = {s: sum(1 for r in table if r["status"] == s) for s in STATUSES}
    cached = sum(1 for r in table if r["cached"] and r["status"] == "ok")
    line = (f"{len(table) - n['interrupted']} evaluations: {n['ok']} simulated or cached ({cached} cached), "
            f"{n['rejected']} rejected, {n['failed']} failed")
    if n["interrupted"]:
        line += f"; {n['interrupted']} interrupted (stopped in flight; their points are evaluated again)"
    return line + f"; {found.elapsed:.1f} s this run"


def _print_outcome(found: Found, model_note: str) -> None:
    """What a person reads after a search: counts, the paper default, the best point and how to bench it."""
    from megasim.app.search import outputs
    ref, space = found.result.reference or {}, found.space
    print(model_note)
    print(f"study {found.result.study_name} ({found.header['storage']})")
    print(counts_line(found))
    if ref.get("time_us"):
        print(f"paper default ({_point_text(ref['point'], space)}): {ref['time_us']:.1f} us")
    elif ref.get("rejected") or ref.get("error"):
        print(f"paper default is illegal here: {ref['rejected']}" if ref.get("rejected")
              else f"paper default failed: {ref['error']}")
    b = found.best
    if b:
        vs = f", {b['vs_paper_default']:.3f}x over the paper default" if b.get("vs_paper_default") else ""
        nf = (f", {b['speedup_vs_nonfused']:.2f}x over non-fused F{b['variant']} {b['nonfused_us']:.1f} us"
              if b.get("speedup_vs_nonfused") else "")
        print(f"best: {b['label']}, {b['time_us']:.1f} us{vs}{nf}: {_point_text(b, space)}")
        margin = found.header.get("fusion_margin")
        if margin:
            print(outputs.margin_text(margin))
        print("bench it: " + outputs.bench_command(found.out / "best.json"))
    print("wrote " + ", ".join(str(p) for p in found.written))


def search_main(args) -> int:
    from megasim.app.calibrate.profile import simulation_model
    from megasim.app.catalog import resolve_layer
    from megasim.app.search.lock import locked_outputs
    from megasim.app.search.store import default_storage, storage_file
    config = check_args(args)
    if args.network:
        from megasim.app.search.network import search_network
        return search_network(args, config)
    layer = resolve_layer(args.layer, args.shape)
    if args.validate_top is not None:
        from megasim.app.search.hardware import require_gpu
        require_gpu()
    gpu, model_note, intervals = simulation_model(args.gpu, args.uncalibrated, args.profile)
    problem, space = prepare(layer, args, gpu, intervals)
    out = Path(args.out or f"out/search/{layer.name}-{gpu.name}")
    storage = args.storage or default_storage(out)
    with locked_outputs(out, storage_file(storage), storage):
        found = search_layer(problem, space, config, storage, out, model_note, intervals=intervals)
        _print_outcome(found, model_note)
        if found.result.interrupted:
            done = sum(1 for r in found.table if r["status"] != "interrupted")
            print(f"interrupted: {done} finished evaluations are kept in {storage}; "
                  f"run the same command to continue", file=sys.stderr)
            return 130
        if args.validate_top and found.best:
            from megasim.app.search import outputs
            from megasim.app.search.hardware import format_validation, validate_top
            doc = validate_top(problem, space, outputs.distinct_best(found.table, space, args.validate_top), out,
                               args.reps, {"gpu": gpu.name, "study": found.header.get("study"), "model": model_note})
            print(format_validation(doc))
            print(json.dumps({"regret": doc["regret"], "pick_prediction_error": doc["pick_prediction_error"]}))
    return 0
