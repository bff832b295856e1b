"""Compile the corpus shapes' kernels (static and persistent builds) in parallel into CuPy's disk cache.

    python docs/results/corpus_h200/precompile.py WORKERS COUNT [GPU]

`megasim calibrate --corpus COUNT` then finds every build cached instead of compiling one at a time.
"""
import sys
from concurrent.futures import ProcessPoolExecutor


def compile_one(job):
    from megasim.app.catalog import partition_for
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import KernelConfig, module, require_cupy
    from megasim.gpu.megakernel import device_blocks_per_sm
    layer, m, gpu = job
    cp = require_cupy()
    part = partition_for(layer, gpu)
    static = module(KernelConfig(layer, WinogradVariant(m), part))
    occ = device_blocks_per_sm(cp, static.function("ms_megakernel"), part.threads)
    module(KernelConfig(layer, WinogradVariant(m), part, mode="persistent", min_blocks=occ))
    return layer.name


if __name__ == "__main__":
    from megasim.app.calibrate.corpus import generate
    workers, count = int(sys.argv[1]), int(sys.argv[2])
    gpu = sys.argv[3] if len(sys.argv) > 3 else "h200"
    jobs = [(s.layer, s.variant, gpu) for s in generate(count, gpu)]
    with ProcessPoolExecutor(workers) as pool:
        print(f"[precompile] {len(list(pool.map(compile_one, jobs)))} shapes")
