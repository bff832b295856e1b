"""Compile every kernel build `megasim bench --layer all` will ask for, in parallel, into CuPy's disk cache.

    python docs/results/bench_h200/precompile.py WORKERS [LAYER...]

On a fresh device machine bench spends most of its time in nvcc, one build at a time; the cache makes its
later compiles hits. Timings are unaffected: bench still compiles (or loads) every build itself.
"""
import sys
from concurrent.futures import ProcessPoolExecutor


def builds(name):
    """The raw-blockIdx build and every build bench times (`bench_best.bench_builds`: the layer's decision space
    with the 3xTF32 twins of its warp builds)."""
    from megasim.app.bench_best import bench_builds
    from megasim.app.catalog import load_layer, partition_for
    from megasim.contract.build import build_partition
    from megasim.contract.resources import PRECISIONS
    layer = load_layer(name)
    base = partition_for(layer, "h200")
    out = [(name, 4, base, "generic", "static", dict(ticket=False, spin_limit_ns=500_000_000))]
    for b in bench_builds(layer, base, PRECISIONS):
        job = (name, b.variant, build_partition(layer, b, base), b.gemm, b.mode, {"precision": b.precision})
        if job not in out:
            out.append(job)
    return out


def compile_one(job):
    from megasim.app.catalog import load_layer
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import KernelConfig, module, require_cupy
    from megasim.gpu.megakernel import device_blocks_per_sm
    name, m, part, gemm, mode, extra = job
    cp = require_cupy()
    cfg = KernelConfig(load_layer(name), WinogradVariant(m), part, gemm=gemm, **extra)
    static = module(cfg)
    if mode != "static":
        occ = device_blocks_per_sm(cp, static.function("ms_megakernel"), part.threads)
        module(KernelConfig(cfg.layer, cfg.variant, part, gemm=gemm, mode=mode, min_blocks=occ, **extra))
    return name


if __name__ == "__main__":
    from megasim.app.catalog import layer_names
    names = sys.argv[2:] or layer_names()[:13]
    jobs = [j for n in names for j in builds(n)]
    with ProcessPoolExecutor(int(sys.argv[1])) as pool:
        done = list(pool.map(compile_one, jobs))
    print(f"[precompile] {len(done)} builds")
