"""Session 15's refit-and-validate: session 13's (`../session13/study.py`, itself session 12's) with the SM company
law given as model settings, and the trace-pinned block laws optionally left to stage 2.

    python docs/results/fidelity_v2/session15/study.py OUTDIR --model JSON [--unpin OPS] [--code-grid C,...] [--variant-grid G,...] [session 12/13 options]

--model: model settings every stage runs under (`neighbour_slowdown`, `unshared_fp32`, `ticket_race`, ...), in
place of the H200's input stretch (set to 0, which `neighbour_slowdown` ignores anyway). --unpin: task types (comma
separated, e.g. output_transform) whose trace law is not pinned: stage 2 fits them as it fits the input transform. --code-grid: stage 3 walks its
usable-L2 grid at each of these `fused_code_factor`s (input and output alike) and keeps the best; --variant-grid
then picks each variant's `fused_code_by_variant` from these, on that variant's training runs.
"""
import runpy
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
argv = sys.argv[1:]
if "--unpin" in argv:
    i = argv.index("--unpin")
    ops = argv[i + 1].split(",")
    del argv[i:i + 2]
    import megasim.app.calibrate.run as run
    from megasim.contract.problem import OP_NAMES
    traced = run.traced_constants

    def unpinned(*args):
        model, pinned = traced(*args)
        return model, {op: law for op, law in pinned.items() if OP_NAMES[op] not in ops}
    run.traced_constants = unpinned
variant_grid = ()
if "--variant-grid" in argv:
    i = argv.index("--variant-grid")
    variant_grid = tuple(float(x) for x in argv[i + 1].split(","))
    del argv[i:i + 2]
if "--code-grid" in argv:
    i = argv.index("--code-grid")
    codes = [float(x) for x in argv[i + 1].split(",")]
    del argv[i:i + 2]
    import megasim.app.calibrate.fit as fit
    import megasim.app.calibrate.run as run
    fused = fit.fit_fused

    def code_grid(runs, spec, overheads=fit.OVERHEADS, usable=fit.USABLE, **kw):
        """Stage 3 with the megakernel's code factor of the transforms in place of the (traced) task overhead."""
        base = spec.with_model(task_overhead_cycles=overheads[0])
        specs = [base.with_model(fused_code_factor={"input_transform": c, "output_transform": c}) for c in codes]
        picked, err = None, None
        for c, sp in zip(codes, specs):
            got, e = fused(runs, sp, overheads=overheads, usable=usable, **kw)
            print(f"stage 3 code factor {c}: {got} error {e:.5f}", flush=True)
            if err is None or e < err:
                picked, err = {**got, "fused_code_factor": {"input_transform": c, "output_transform": c}}, e
        if variant_grid:
            picked["fused_code_by_variant"] = by_variant(runs, spec.with_model(**picked), kw.get("pool"))
        return picked, err

    def by_variant(runs, spec, pool):
        """Each variant's factor on the common one, on up to 24 of its own training runs."""
        from megasim.app.calibrate.predict import graph_of
        out = {}
        for m in (2, 4, 6):
            own = [r for r in runs if r.get("split") == "train" and r.get("fused_us") and r.get("variant", 4) == m
                   and graph_of(r).num_tasks <= 40_000]
            chosen = own[::max(1, len(own) // 24)][:24]
            errors = {g: fit._log_error(spec.with_model(fused_code_by_variant={**out, f"F{m}": g}), chosen, pool)
                      for g in variant_grid}
            out[f"F{m}"] = min(errors, key=errors.get)
            print(f"stage 3 variant F({m}), {len(chosen)} runs: " + ", ".join(f"{g}: {e:.5f}" for g, e in errors.items()),
                  flush=True)
        return out
    run.fit_fused = code_grid
if "--model" in argv:
    i = argv.index("--model")
    argv[i:i + 2] = ["--over", argv[i + 1], "--stretch", "0"]
sys.argv = [str(here.parent / "session13" / "study.py"), *argv]
runpy.run_path(sys.argv[0], run_name="__main__")
