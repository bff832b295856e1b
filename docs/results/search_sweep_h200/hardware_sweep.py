"""Measure a declared grid of mappings on the GPU, exhaustively (the study behind search_sweep_h200.json).

For each layer (default: ResNet-1, small channels; ResNet-2, mid; ResNet-4,
large) every point of `GRID` (D_IG x D_GO x M, 54 mappings) runs on the
layer's `megasim bench` partition through `gpu.bench.bench_layer`, the same
timing method as `megasim bench`. Rows are written to the output JSON after
each point, and points already there are skipped, so a sweep cut off by a
time limit continues where it stopped when run again.

The CPU side (`evaluation.py`, beside this script) re-derives from that file where the
simulator's top-5 fall in the measured ranking, the regret of its pick, and
the hardware runs it saves.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

from megasim.io.writing import write_then_rename
from megasim.app.search.runner import point_key
from megasim.contract.mapping.paper import PaperOptions
from megasim.contract.options import search_values

HERE = Path(__file__).resolve().parent

# A 54-point part of the declared search space, small enough to measure exhaustively.
GRID = search_values(PaperOptions, dig=(0, 128, 256, 512, 1024, 2048), dgo=(0, 256, 1024), m=(1, 2, 4))
LAYERS = ("ResNet-1", "ResNet-2", "ResNet-4")
SWEEP_SCHEMA = 1


def grid_points(grid: dict = GRID) -> list[dict]:
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def row_key(layer: str, point: dict) -> str:
    return point_key({"layer": layer, **point})


def measure(problem, space, point: dict, reps: int) -> dict:
    """One grid point's fused build timed by `bench_build.time_builds` (bench's method)."""
    from megasim.app.bench_build import Candidate, time_builds
    from megasim.contract.build import Build
    chosen, part, opts = problem.at(space, point)
    b = chosen.build
    (row,) = time_builds(problem.layer, [Candidate(Build(b.launch, b.variant, b.mode, b.gemm, part), space.strategy,
                                                   tuple(sorted(opts.items())))], reps)
    return {"measured_fused_us": row["measured_us"], "measured_fused_p10_us": row["p10_us"],
            "measured_fused_p90_us": row["p90_us"], "rel_err": row["rel_err"], "within_tolerance": row["accurate"]}


def sweep(layers, out: Path, reps: int, gpu_name: str) -> dict:
    from megasim.gpu.backend import measurement_header
    from megasim.app.catalog import partition_for
    from megasim.contract.problem import WinogradVariant
    from megasim.app.catalog import load_layer
    from megasim.app.search.hardware import require_gpu
    from megasim.app.search.objective import Problem
    from megasim.app.search.space import build_space
    from megasim.app.catalog import load_gpu
    cp = require_gpu()
    doc = json.loads(out.read_text()) if out.exists() else {"rows": []}
    doc["header"] = {"schema": SWEEP_SCHEMA, **measurement_header(), "reps": reps,
                     "gpu": gpu_name, "grid": {k: list(v) for k, v in GRID.items()}, "strategy": "paper"}
    done = {row_key(r["layer"], r["point"]) for r in doc["rows"]}
    for name in layers:
        layer = load_layer(name)
        part = partition_for(layer, gpu_name)
        space = build_space("paper", part, {**{k: tuple(v) for k, v in GRID.items()}, "variant": (4,),
                                            "mode": ("static",), "launch": ("fused",), "gemm": ("generic",)})
        problem = Problem(layer, WinogradVariant(4), load_gpu(gpu_name))
        for point in grid_points():
            if row_key(layer.name, point) in done:
                continue
            t0 = time.perf_counter()
            row = {"layer": layer.name, "partition": part.to_dict(), "point": point,
                   **measure(problem, space, point, reps)}
            doc["rows"].append(row)
            with write_then_rename(out) as tmp:
                tmp.write_text(json.dumps(doc, indent=1))
            print(f"{layer.name:9} {point}  fused {row['measured_fused_us']:9.1f} us  "
                  f"err {row['rel_err']:.1e}  ({time.perf_counter() - t0:.1f} s)", flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    return doc


def main(argv=None) -> int:
    from megasim.contract.errors import MegasimError
    p = argparse.ArgumentParser(prog="python docs/results/search_sweep_h200/hardware_sweep.py", description=__doc__.splitlines()[0])
    p.add_argument("--layer", action="append", help=f"repeatable; default {', '.join(LAYERS)}")
    p.add_argument("--gpu", default="h200", help="the spec name this device is (for the file and the header)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", help="default search_sweep_<gpu>.json beside this script")
    args = p.parse_args(argv)
    out = Path(args.out or HERE / f"search_sweep_{args.gpu}.json")
    try:
        sweep(args.layer or LAYERS, out, max(20, args.reps), args.gpu)
    except MegasimError as exc:
        print(f"hardware_sweep: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
