"""`megasim calibrate`: measure this machine's GPU and fit a profile, or measure its corpus shapes, or write its spec.

The flags were checked and defaulted before any work (`raw.calibrate_defaults`). `--spec-only` needs no spec
of the GPU: it is how a GPU megasim has never seen gets one (`spec_writer`).
"""
from __future__ import annotations

import json
from pathlib import Path


def calibrate_main(args) -> int:
    from megasim.app.catalog import load_gpu
    if args.spec_only:
        return _spec_only(args)
    if args.corpus is not None:
        from megasim.app.calibrate.corpus_runs import measure_corpus
        name = load_gpu(args.gpu).name
        counts = measure_corpus(name, Path(args.raw) / f"{name}_corpus.jsonl", args.corpus, args.reps, args.budget_s)
        print(json.dumps(counts))
        return 0
    from megasim.app.calibrate.run import fit_profile
    if not args.from_raw:
        from megasim.app.calibrate.measure import calibrate_measure
        calibrate_measure(load_gpu(args.gpu).name, args.raw, args.reps)
    fit_profile(args.gpu, args.raw, args.out, sharing=args.sharing, trace_sample=args.trace_sample)
    from megasim.app.calibrate.raw import fitted_note
    print(fitted_note(load_gpu(args.gpu).name, args.out, args.raw, measured=not args.from_raw))
    return 0


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
