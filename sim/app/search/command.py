"""`megasim search`: resolve the problem and the space, run the search, write and print what it found."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from megasim.contract.errors import MegasimError
from megasim.contract.writing import check_writable, make_folders


def _base_partition(layer, gpu_name: str, overrides: str | None):
    """The partition the kernels use for this layer on this GPU (scenarios/partitions), with overrides."""
    from megasim.app.catalog import partition_for
    return partition_for(layer, gpu_name, overrides)


def _point_text(row: dict, space) -> str:
    """The searched parameters of a row, and its variant and mode even where they are pinned."""
    return " ".join(f"{p.name}={row[p.name]}" for p in space.params if p.kind == "problem" or len(p.values) > 1)


def _overrides(args) -> dict:
    """`--space` lists, with `--variant` and `--mode` as one-value lists (the same pin, said shorter)."""
    from megasim.app.search.space import parse_overrides
    overrides = parse_overrides(args.space)
    for name, value in (("variant", args.variant), ("mode", args.mode)):
        if value is None:
            continue
        if name in overrides:
            raise MegasimError(f"--{name} and --space {name}=... both given; use one")
        overrides[name] = (value,)
    return overrides


def _print_outcome(table, result, space, storage, elapsed, model_note, written, out) -> None:
    """What a person reads after a search: counts, the paper default, the best point and how to bench it."""
    from megasim.app.search import outputs
    ok = [r for r in table if r["status"] == "ok"]
    ref = result.reference or {}
    counts = {s: sum(1 for r in table if r["status"] == s) for s in ("ok", "rejected", "failed")}
    cached = sum(1 for r in table if r["cached"])
    print(f"model: {model_note}")
    print(f"study {result.study_name} ({storage})")
    print(f"{len(table)} evaluations: {counts['ok']} simulated or cached ({cached} cached), "
          f"{counts['rejected']} rejected, {counts['failed']} failed; {elapsed:.1f} s this run")
    if ref.get("fused_us"):
        print(f"paper default ({_point_text(ref['point'], space)}): {ref['fused_us']:.1f} us")
    elif ref:
        print(f"paper default is illegal here: {ref.get('rejected')}")
    if ok:
        b = ok[0]
        vs = f", {b['vs_paper_default']:.3f}x over the paper default" if b.get("vs_paper_default") else ""
        nf = (f", {b['speedup_vs_nonfused']:.2f}x over non-fused F{b['variant']} {b['nonfused_us']:.1f} us"
              if b.get("nonfused_us") else "")
        print(f"best: {b['fused_us']:.1f} us{vs}{nf}: {_point_text(b, space)}")
        print("bench it: " + outputs.bench_command(out / "best.json"))
    print("wrote " + ", ".join(str(p) for p in written))


def require_optuna() -> None:
    """Search is an extra (`pip install -e ".[search]"`): without Optuna, one line, before anything is made."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise MegasimError('megasim search needs Optuna: pip install -e ".[search]" (or pip install optuna)') from None


def search_main(args) -> int:
    require_optuna()
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import resolve_layer
    from megasim.app.search import outputs
    from megasim.app.search.heatmaps import write_heatmaps
    from megasim.app.search.objective import Problem
    from megasim.app.search.runner import SearchConfig, run_search
    from megasim.app.search.space import build_space

    layer = resolve_layer(args.layer, args.shape)
    if args.validate_top is not None:
        if args.validate_top < 1:
            raise MegasimError(f"--validate-top must be >= 1, got {args.validate_top}")
        from megasim.app.search.hardware import require_gpu
        require_gpu()
    gpu, model_note = gpu_for_simulation(args.gpu, args.uncalibrated)
    space = build_space(args.strategy, _base_partition(layer, gpu.name, args.partition), _overrides(args))
    out = Path(args.out or f"search-results/{layer.name}-{gpu.name}")
    check_writable(out, folder=True)
    storage = args.storage or f"sqlite:///{out / 'study.db'}"
    if storage.startswith("sqlite:///"):
        make_folders(Path(storage[len("sqlite:///"):]).parent)
    variant, mode = space.setting(space.default_point())  # the reference's; each point brings its own
    problem = Problem(layer, variant, gpu, args.strategy, mode=mode)
    config = SearchConfig(method=args.method, budget=args.budget, jobs=args.jobs, scheduler=args.scheduler,
                          storage=storage, seed=args.seed, progress=not args.quiet)
    t0 = time.perf_counter()
    result = run_search(problem, space, config)
    elapsed = time.perf_counter() - t0

    table = outputs.rows(result, space)
    ok = [r for r in table if r["status"] == "ok"]
    ref = result.reference or {}
    values = {p.name: p.values for p in space.params}
    header = {"layer": {"name": layer.name, "n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "k": layer.k},
              "variants": list(values["variant"]), "modes": list(values["mode"]), "gpu": gpu.name,
              "model": model_note, "strategy": space.strategy, "method": config.method, "budget": result.budget,
              "study": result.study_name, "storage": storage, "space": space.describe(), "paper_default": ref,
              "nonfused_us_by_variant_partition": result.nonfused, "elapsed_s": elapsed,
              "interrupted": result.interrupted}
    written = list(outputs.write_table(table, header, out))
    if ok:
        written.append(outputs.write_best(problem, space, ok[0], out, header))
        written += write_heatmaps(table, space, out, layer.name, gpu.name, ref)

    _print_outcome(table, result, space, storage, elapsed, model_note, written, out)
    if result.interrupted:
        print(f"interrupted: {len(table)} finished evaluations are kept in {storage}; "
              f"run the same command to continue", file=sys.stderr)
        return 130
    if args.validate_top and ok:
        from megasim.app.search.hardware import format_validation, validate_top
        doc = validate_top(problem, space, outputs.distinct_best(table, space, args.validate_top), ref, out,
                           args.reps)
        print(format_validation(doc))
        print(json.dumps({"regret": doc["regret"]}))
    return 0
