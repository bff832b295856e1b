"""Registers, shared memory and the driver's blocks per SM of every build the register plan holds, as CuPy
compiles them: the kernels that really run (NVRTC), not nvcc's offline ptxas.

    python docs/results/occupancy_device/measure.py OUT [WORKERS]   # on a device, megasim on PYTHONPATH

The builds are tests/sim/test_occupancy_plan.py's `builds()`: the search space on the paper layers in
F(2), F(4) and F(6), every run of the committed corpora, every network layer. Writes OUT/device_usage.json:
per build, keyed as the test keys it (a hash of the compiler and the generated source), each kernel's
[registers, static shared bytes, blocks per SM by cuOccupancyMaxActiveBlocksPerMultiprocessor].
"""
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "sim"))

def one(job):
    """A build's kernels, compiled as `megasim.gpu.backend.module` compiles them: [registers, static shared
    bytes, driver blocks per SM] each."""
    (part, _), (layer, variant) = job
    import cupy as cp
    from megasim.gpu.backend import KERNEL_FUNCTIONS, KernelConfig, module
    from megasim.gpu.megakernel import device_blocks_per_sm
    built = module(KernelConfig(layer, variant, part))
    out = {}
    for kernel, name in KERNEL_FUNCTIONS.items():
        fn = built.function(name)
        out[kernel] = [fn.attributes["num_regs"], fn.attributes["shared_size_bytes"],
                       device_blocks_per_sm(cp, fn, part.threads)]
    return out


def main(out: Path, workers: int) -> None:
    import test_occupancy_plan as plan_test
    todo = plan_test.builds()
    from megasim.gpu.backend import compiler_id
    release = compiler_id()
    sources = [plan_test.source_of(build, made_by) for build, made_by in todo.items()]
    keys = [plan_test.store_key(src, release) for src in sources]
    t0 = time.time()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        usage = list(pool.map(one, list(todo.items())))
    import cupy as cp
    doc = {"compiler": release, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "about": "per build: kernel -> [registers, static smem bytes, driver blocks/SM]; keyed by "
                    "sha256(compiler + generated source)[:20] (tests/sim/test_occupancy_plan.py)",
           "builds": {k: {"build": {"partition": b[0].to_dict(), "variant": b[1].m,
                                    "vector_loads": [b[1].vector_c, b[1].vector_k], "layer": todo[b][0].name},
                          "usage": u} for k, b, u in zip(keys, todo, usage)}}
    (out / "device_usage.json").write_text(json.dumps(doc, indent=0) + "\n")
    print(f"{len(todo)} builds in {time.time() - t0:.0f} s, {release}, {doc['device']}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 12)
