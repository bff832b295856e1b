"""The committed occupancy measurements are what the driver says of the kernels compiled here and now.

tests/sim/test_occupancy_plan.py holds the plan to docs/results/occupancy_device's measurements without a
GPU. This compiles a sample of those builds as CuPy does (one per thread count and one per flavor) and asks
the driver: registers, static shared memory and blocks per SM must be the measured ones, and the plan's.
"""
import pytest

from megasim.app.catalog import load_gpu
from megasim.contract.resources import blocks_per_sm

from ..sim.test_occupancy_plan import builds, measured, planned, source_of, store_key

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.gpu.backend import KERNEL_FUNCTIONS, KernelConfig, compiler_id, module  # noqa: E402
from megasim.gpu.megakernel import device_blocks_per_sm  # noqa: E402


def sample() -> dict:
    todo = builds()
    firsts = {}
    for build in todo:
        firsts.setdefault(build[0].threads, build)
        firsts.setdefault(build[1], build)
    return {b: todo[b] for b in dict.fromkeys(firsts.values())}


SAMPLE = sample()


@pytest.mark.parametrize("build", list(SAMPLE), ids=[f"t{p.threads}-f{f.m}-{int(f.vector_c)}{int(f.vector_k)}"
                                                    for p, f in SAMPLE])
def test_driver_reads_the_measured_usage_and_the_plans_occupancy(build):
    compiler, store = measured()
    source = source_of(build, SAMPLE[build])
    here = compiler_id()
    assert here == compiler, f"the measurements are of {compiler}, this device compiles with {here}: measure again"
    entry = store[store_key(source, compiler)]["usage"]
    layer, variant = SAMPLE[build]
    built = module(KernelConfig(layer, variant, build[0]))
    h200 = load_gpu("h200")
    for kernel, name in KERNEL_FUNCTIONS.items():
        fn = built.function(name)
        got = [fn.attributes["num_regs"], fn.attributes["shared_size_bytes"],
               device_blocks_per_sm(cp, fn, build[0].threads)]
        assert got == entry[kernel], (kernel, got, entry[kernel])
        assert blocks_per_sm(h200, planned(build, kernel)) == got[2], kernel
