"""Every .cu file compiles for Hopper with nvcc, on the CPU (skipped only without nvcc).

Each file compiles on its own against the committed default ms_config.cuh,
and the full generated source compiles for the builds that take other code
paths: every Winograd variant, ragged C and K (scalar loads), the trace
build, the raw-blockIdx build, the NCHW and self-resetting builds, and the 3xTF32 GEMM body.
"""
import shutil
import subprocess
from dataclasses import replace

import pytest

from megasim.gpu.backend import DEFAULT_CONFIG, KERNEL_DIR, TRACE_ONLY, KernelConfig, kernel_source
from megasim.contract.problem import Layer, Partition, WinogradVariant

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def _nvcc(src, tmp_path):
    out = tmp_path / "out.o"
    res = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", f"-I{KERNEL_DIR}", "-c", str(src), "-o", str(out)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("name", sorted(p.name for p in KERNEL_DIR.glob("*.cu")))
def test_cu_file_compiles(name, tmp_path):
    _nvcc(KERNEL_DIR / name, tmp_path)


SMALL = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                  gemm_k_per_task=32, output_channels_per_task=8, filter_k_per_task=4, threads=128)
WARP = Partition(tiles_per_group=64, input_channels_per_task=32, gemm_mats_per_task=1, gemm_k_per_task=64,
                 output_channels_per_task=32, filter_k_per_task=8, threads=128)  # the warp tiling, 8 x 4 a thread
BUILDS = {
    "f2": KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(2), DEFAULT_CONFIG.partition),
    "f6-ragged": KernelConfig(Layer(3, 5, 9, 13, 7), WinogradVariant(6), SMALL),
    "trace": KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(4), DEFAULT_CONFIG.partition, trace=True),
    "raw-blockidx": KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(4), SMALL, ticket=False),
    "persistent-trace": KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(4), SMALL, trace=True, mode="persistent"),
    "nchw-self-reset": KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(4), SMALL, layout="nchw", self_reset=True),
    "ready-queue-self-reset": KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(2), SMALL, mode="ready_queue",
                                           self_reset=True),
    "3xtf32-8x4": KernelConfig(Layer(2, 64, 14, 12, 64), WinogradVariant(4), WARP, gemm="warp", precision="3xtf32"),
    "3xtf32-8x8-f6": KernelConfig(Layer(2, 64, 14, 12, 128), WinogradVariant(6), replace(WARP, gemm_k_per_task=128),
                                  gemm="warp", precision="3xtf32", mode="persistent"),
}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_generated_source_compiles(build, tmp_path):
    src = tmp_path / "kernel.cu"
    src.write_text(kernel_source(BUILDS[build]))
    _nvcc(src, tmp_path)


def test_nonfused_trace_module_compiles(tmp_path):
    """The non-fused kernels' trace build is a module of its own: the config and trace_nonfused.cu."""
    src = tmp_path / "trace.cu"
    src.write_text(kernel_source(BUILDS["f6-ragged"], TRACE_ONLY))
    _nvcc(src, tmp_path)
