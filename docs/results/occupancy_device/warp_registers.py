"""Registers, static shared memory and the driver's blocks per SM of every warp-tiled GEMM build of the paper
layers in each precision (FFMA, and 3xTF32 on tensor cores), beside the generic build of the same partition, as
CuPy compiles them (NVRTC, sm_90).

    python docs/results/occupancy_device/warp_registers.py OUT [WORKERS]   # on a device, after .ci/device_site.sh

A warp build is the layer's H200 partition widened by `megasim.contract.resources.warp_partition`, in F(2),
F(4) and F(6), where `gemm_warp_tiled` allows; the register plan (`sim/contract/kernel_registers.json`) keys
its rows by the GEMM body and its precision too, so the simulator sizes a warp build's SM slots with its own
registers (YOLOv3-1's F(4) megakernel takes 122 in FP32 and 148 in 3xTF32: three blocks an SM, not four).
Writes OUT/warp_usage.json: per build, each kernel's [registers, static shared bytes, driver blocks per SM].
"""
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def builds() -> list:
    from megasim.app.catalog import layer_names, load_layer, partition_for
    from megasim.contract.problem import VARIANTS
    from megasim.contract.errors import MegasimError
    from megasim.contract.resources import check_kernel_build, gemm_warp_tiled, warp_partition

    def builds_of(layer, part, gemm, precision):
        try:
            check_kernel_build(layer, part, gemm, precision=precision)
        except MegasimError:
            return False
        return True
    out = []
    for name in layer_names()[:13]:
        layer = load_layer(name)
        part = warp_partition(layer, partition_for(layer, "h200"))
        if gemm_warp_tiled(layer, part):
            out += [(layer, m, part, gemm, precision) for m in VARIANTS
                    for gemm, precision in (("warp", "fp32"), ("warp", "3xtf32"), ("generic", "fp32"))
                    if builds_of(layer, part, gemm, precision)]
    return out


def one(job):
    layer, m, part, gemm, precision = job
    import cupy as cp
    from megasim.contract.problem import WinogradVariant
    from megasim.gpu.backend import KERNEL_FUNCTIONS, KernelConfig, module
    from megasim.gpu.megakernel import device_blocks_per_sm
    built = module(KernelConfig(layer, WinogradVariant(m), part, gemm=gemm, precision=precision))
    usage = {}
    for kernel, name in KERNEL_FUNCTIONS.items():
        fn = built.function(name)
        usage[kernel] = [fn.attributes["num_regs"], fn.attributes["shared_size_bytes"],
                         device_blocks_per_sm(cp, fn, part.threads)]
    return {"layer": layer.name, "shape": [layer.n, layer.c, layer.h, layer.w, layer.k], "variant": m,
            "gemm": gemm, "precision": precision, "partition": part.to_dict(), "usage": usage}


def main(out: Path, workers: int) -> None:
    todo = builds()
    t0 = time.time()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        rows = list(pool.map(one, todo))
    import cupy as cp
    from megasim.gpu.backend import compiler_id
    doc = {"compiler": compiler_id(), "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "about": "per build: kernel -> [registers, static smem bytes, driver blocks/SM]", "builds": rows}
    (out / "warp_usage.json").write_text(json.dumps(doc, indent=0) + "\n")
    for r in rows:
        print(r["layer"], f"F{r['variant']}", r["gemm"], r["precision"], {k: v[0] for k, v in r["usage"].items()},
              "blocks/SM", r["usage"]["megakernel"][2], r["usage"]["gemm"][2])
    print(f"{len(rows)} builds in {time.time() - t0:.0f} s, {doc['compiler']}, {doc['device']}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 12)
