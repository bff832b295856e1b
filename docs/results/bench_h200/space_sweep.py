"""Time the builds of the decision space that `bench` does not, on the paper layers, in the builds-file format.

    python3 docs/results/bench_h200/space_sweep.py OUT [LAYER...]   # on a device, after .ci/device_site.sh

`megasim bench` times every mode and variant fused, both GEMM bodies, but the warp body in two modes only and
the non-fused launch at F(4) only. This times, per layer, every build of `megasim.contract.build.discrete_builds`
that `scenarios/calibrations/raw/h200_builds.json` lacks (the warp body's ready queue, non-fused F(2) and F(6) of
both bodies), and the fused static F(4) generic build again, whose time the file has, to show the drift between
the two sessions. Same method as bench: CuPy events, 20 repetitions, inputs rotated past L2, outputs poisoned with
NaN, a non-fused build as its graph-captured four launches; a build whose output is not within its variant's
tolerance of float64 (bench's `TOLERANCE`) is recorded with its error and no time. Writes OUT/space_sweep.json
(rows as `to_raw.py` writes them, plus `rel_err` and `drift`), after compiling every build in parallel.
"""
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[2] / "scenarios" / "calibrations" / "raw" / "h200_builds.json"
HELDOUT = ("ResNet-3", "VGG-2", "YOLOv3-2")


def todo(names):
    """(layer name, Build, partition, drift) of each build to time."""
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.build import Build, build_partition, discrete_builds
    have = {(r["layer"]["name"], r["launch"], r["variant"], r["mode"], r["gemm"])
            for r in json.loads(RAW.read_text())["builds"]}
    out = []
    for name in names:
        layer = load_layer(name)
        own = partition_for(layer, "h200")
        for b in discrete_builds(layer, own):
            drift = b == Build()
            if drift or (layer.name, b.launch, b.variant, b.mode, b.gemm) not in have:
                out.append((name, b, build_partition(layer, b, own), drift))
    return out


def compile_one(job):
    """`precompile.compile_one` (this folder) for one build to time: its kernels into CuPy's cache."""
    from precompile import compile_one as compile_build
    name, b, part, _ = job
    return compile_build((name, b.variant, part, b.gemm, b.mode, {}))


def time_layer(name, jobs, reps=20):
    from megasim.app.bench import _reference, _rel
    from megasim.app.bench_best import TOLERANCE
    from megasim.app.catalog import load_layer
    from megasim.contract.graph import build_graph
    from megasim.contract.interpreter import RunConfig
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import require_cupy
    from megasim.gpu.interpreter import CudaInterpreter
    from megasim.gpu.megakernel import Workspace
    from megasim.gpu.timing import rotation_inputs
    cp = require_cupy()
    layer = load_layer(name)
    xs, wts, ys = rotation_inputs(cp, layer, 7)
    ref, _ = _reference(cp, layer, xs[0], wts[0])
    inputs = tuple(zip(xs, wts, ys))
    rows = []
    for _, b, part, drift in jobs:
        g = build_graph(layer, WinogradVariant(b.variant), part)
        mapping = make(g, "paper")
        cuda = CudaInterpreter(workspace=Workspace(g), gemm=b.gemm, graph_capture=b.launch == "nonfused")
        run = cuda.run(g, mapping if b.launch == "fused" else None,
                       RunConfig(launch=b.launch, mode=b.mode, inputs=inputs, reps=reps))
        err = _rel(cp, run.output, ref)
        good = bool(cp.isfinite(run.output).all()) and err <= TOLERANCE[b.variant]
        rows.append({"layer": {"n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "k": layer.k,
                               "name": layer.name},
                     "partition": part.to_dict(), "strategy": mapping.strategy, "params": mapping.params,
                     "launch": b.launch, "variant": b.variant, "mode": b.mode, "gemm": b.gemm,
                     "us": round(run.native["median_us"], 3) if good else None, "rel_err": err,
                     "split": "heldout" if layer.name in HELDOUT else "train", "drift": drift})
        print(name, b.label, rows[-1]["us"], f"{err:.1e}", flush=True)
        del cuda, run
    return rows


def main(out: Path, names) -> None:
    from megasim.gpu.backend import device_info, git_commit, kernel_build_hash
    jobs = todo(names)
    t0 = time.time()
    with ProcessPoolExecutor(14) as pool:
        list(pool.map(compile_one, jobs))
    print(f"compiled {len(jobs)} builds in {time.time() - t0:.0f} s", flush=True)
    rows = [r for name in names for r in time_layer(name, [j for j in jobs if j[0] == name])]
    doc = {"header": {**device_info(), "git_commit": git_commit(), "kernel_build": kernel_build_hash(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reps": 20,
                      "source": "docs/results/bench_h200/space_sweep.py"}, "builds": rows}
    (out / "space_sweep.json").write_text(json.dumps(doc, indent=0) + "\n")
    print(f"{len(rows)} builds timed in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__.split("\n\n")[1])
    from megasim.app.catalog import layer_names
    main(Path(sys.argv[1]), sys.argv[2:] or layer_names()[:13])
