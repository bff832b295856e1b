"""`megasim calibrate`: measure this machine's GPU and fit a profile, or measure its corpus shapes, or write its spec.

The flags were checked and defaulted before any work (`raw.calibrate_defaults`). A measuring call starts from
whatever the raw folder holds, empty included, measures what is missing within `--budget-s` (on every GPU of the
host with `--scheduler local`, `spread`), then fits and validates; a GPU megasim has no spec of gets one from the
device first (`spec_writer`), beside the profile. `--spec-only` writes only that spec.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from megasim.contract.errors import MegasimError


def calibrate_main(args) -> int:
    if args.spec_only:
        return _spec_only(args)
    if args.corpus is not None:
        from megasim.app.calibrate.corpus_runs import measure_corpus
        counts = measure_corpus(args.gpu_name, Path(args.raw) / f"{args.gpu_name}_corpus.jsonl", args.corpus,
                                args.reps, args.budget_s or 500.0)
        print(json.dumps(counts))
        return 0
    if not args.from_raw:
        left = _measure(args)
        if left:
            why = (f"when --budget-s {args.budget_s:.0f} ran out" if args.budget_s is not None
                   else "unfinished (the lines above say why)")
            print(f"measured into {args.raw}; {', '.join(left)} left {why}: run the same command again to continue "
                  "where it stopped")
            return 0
    from megasim.app.calibrate.raw import fitted_note
    from megasim.app.calibrate.run import fit_profile
    from megasim.io.writing import durable
    with durable():  # the profile is kept, and read back by its validation
        fit_profile(args.spec, args.raw, args.out, jobs=args.jobs, sharing=args.sharing,
                    trace_sample=args.trace_sample)
    heldout = "" if args.from_raw else _validation(args)
    print(fitted_note(args.gpu_name, args.out, args.raw, measured=not args.from_raw, spec=args.spec) + heldout)
    return 0


def _measure(args) -> list[str]:
    """Measure what the raw folder lacks, within --budget-s; a GPU without a spec gets one written from its
    microbenchmarks first (`spec_writer`), beside the profile. Each raw file is kept as soon as it is written
    whole (`durable`), whatever fails later. Returns the parts left."""
    from megasim.app.calibrate.measure import calibrate_measure
    from megasim.io.writing import durable
    budget = args.budget_s if args.budget_s is not None else float("inf")
    with durable():
        if args.generated and not Path(args.spec).exists():
            from megasim.app.calibrate.spec_writer import write_spec
            t0 = time.perf_counter()
            if calibrate_measure(args.gpu_name, args.raw, args.reps, parts=("hardware", "tasks"))["hardware"] == "done":
                micro = Path(args.raw) / f"{args.gpu_name}_micro.json"
                print(f"wrote {write_spec(args.gpu_name, micro, args.spec)}, the spec of {args.gpu_name}, from what "
                      "the device reports and the microbenchmarks measure")
            budget -= time.perf_counter() - t0
        status = (calibrate_measure(args.gpu_name, args.raw, args.reps, budget_s=budget) if not args.scheduler
                  else _spread(args, budget))
    return [part for part, state in status.items() if state == "left"]


def _spread(args, budget: float) -> dict:
    """The parts over this host's GPUs, one Dask worker each (`spread`): `--scheduler local` takes every GPU,
    `local:N` the first N."""
    from megasim.app.calibrate.measure import CORPUS_SUBSET, PARTS
    from megasim.app.calibrate.spread import identical_gpus, measure_spread
    from megasim.app.search.dask_runner import local_workers, start_local
    gpus = identical_gpus()
    devices = local_workers(args.scheduler, gpus)
    if devices > gpus:
        raise MegasimError(f"--scheduler {args.scheduler} asks for {devices} GPUs; this host has {gpus}")
    executor = start_local(devices)
    try:
        return measure_spread(args.gpu_name, args.raw, args.reps, PARTS, budget, CORPUS_SUBSET, executor, devices)
    finally:
        executor.shutdown()


def _validation(args) -> str:
    """The new profile's held-out report (`validate`, with the corpus subset), and its MAPE in a line."""
    from megasim.app.calibrate.raw import raw_paths
    from megasim.app.calibrate.run import validate_profile
    out = Path(args.out).parent / f"{args.gpu_name}_validation"
    summary = validate_profile(args.out, raw_paths(args.raw, args.gpu_name)["runs"], out, args.jobs, corpus=True,
                               log=lambda *_: None, progress=False)
    held, corpus = summary["mape"]["heldout"], summary.get("corpus")
    shapes = (f"; held-out corpus shapes: fused {corpus['fused_mape']:.1%}, non-fused {corpus['nonfused_mape']:.1%}"
              if corpus else "")
    return (f"\n  held-out MAPE: paper layers' runs: fused {held['fused']:.1%}, non-fused {held['nonfused']:.1%}"
            f"{shapes} (report: {out / 'calibration.md'})")


def _spec_only(args) -> int:
    """Measure the microbenchmarks (unless --from-raw) into <raw>/<gpu>_micro.json and write the spec."""
    from megasim.app.calibrate.spec_writer import write_spec
    name = args.gpu.lower()
    micro = Path(args.raw) / f"{name}_micro.json"
    if not args.from_raw:
        from megasim.app.calibrate.measure import calibrate_measure
        calibrate_measure(name, args.raw, args.reps, parts=("hardware",))
    path = write_spec(name, micro, args.out)
    print(f"wrote {path}, the spec of {name} from {micro}; simulate with it: megasim simulate --gpu {path}")
    return 0
