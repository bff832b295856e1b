"""CuPy access, device facts, and the per-configuration kernel build.

Every number that shapes the kernels (layer, Winograd variant, partition,
GEMM register blocking) is compiled in. `KernelConfig` names one build;
`config_header(cfg)` renders it as `ms_config.cuh` (macros plus the transform
matrices written out with explicit rounding intrinsics, so every build rounds
the same way); `module(cfg)` compiles megakernel.cu and nonfused.cu into one
CuPy module, cached per config. A compiled module remembers its config and
refuses a TaskGraph built for another one.

CuPy is imported here and only here, inside try/except, so the package and
its CPU tests import on machines without a GPU.
"""
from __future__ import annotations

import datetime
import os
import subprocess
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import Geometry, TaskGraph
from megasim.contract.problem import Layer, Partition, WinogradVariant
from megasim.contract.resources import (GEMM_BODIES, GEMM_K_STEP, PRECISIONS, check_kernel_build, gemm_plan,
                                       gemm_ring, gemm_vector_loads)
from megasim.contract.scheduling import RESIDENT_MODES, check_mode
from megasim.contract.transforms import winograd_matrices
from megasim.gpu.build import KERNEL_DIR, kernel_build_hash  # noqa: F401  (their older home)

try:
    import cupy as cp
except ImportError:  # CPU-only machine: the kernels cannot run, everything else still imports
    cp = None

SOURCES = ("nonfused.cu", "megakernel.cu")
LAYOUTS = ("nhwc", "nchw")  # of the input and output; the filters are [K][3][3][C] either way
TRACE_ONLY = ("trace_nonfused.cu",)  # the non-fused kernels' trace build (gpu/nonfused.py), its own module
COMPILE_OPTIONS = ("-std=c++17", "--fmad=true")
KERNEL_FUNCTIONS = {"megakernel": "ms_megakernel", "filter_transform": "ms_filter_kernel",
                    "input_transform": "ms_input_kernel", "gemm": "ms_gemm_kernel", "output_transform": "ms_output_kernel"}


def require_cupy():
    if cp is None:
        raise MegasimError("the GPU path needs CuPy (pip install cupy-cuda12x or cupy-cuda13x) and an NVIDIA GPU")
    return cp


def compiler_id() -> str:
    """What compiles the kernels (NVRTC, through CuPy): registers, and so occupancy, depend on it, and the
    occupancy measurements (docs/results/occupancy_device) are keyed by it."""
    c = require_cupy()
    major, minor = c.cuda.nvrtc.getVersion()
    return f"nvrtc {major}.{minor}, cupy {c.__version__}"


def device_info() -> dict:
    """Device, driver and library versions for result headers."""
    c = require_cupy()
    dev = c.cuda.Device()
    props = c.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"]
    return {
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": dev.compute_capability,
        "sm_count": int(props["multiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "driver_version": int(c.cuda.runtime.driverGetVersion()),
        "runtime_version": int(c.cuda.runtime.runtimeGetVersion()),
        "cupy_version": c.__version__,
    }


def git_commit() -> str:
    """The commit measured: $MEGASIM_GIT_COMMIT (the device copy has no .git), else git, else 'unknown'."""
    env = os.environ.get("MEGASIM_GIT_COMMIT")
    if env:
        return env
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True)
    except OSError:
        return "unknown"
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else "unknown"


def measurement_header() -> dict:
    """Who measured, at the head of every results file: `device_info`, the driver string,
    the commit, the kernel build and the date (UTC)."""
    info = device_info()
    try:
        drivers = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        drivers = []  # driver_version (the CUDA driver API's) still identifies the driver branch
    dev = require_cupy().cuda.Device().id
    return {**info, "driver": drivers[dev].strip() if dev < len(drivers) else None, "git_commit": git_commit(),
            "kernel_build": kernel_build_hash(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


@dataclass(frozen=True)
class KernelConfig:
    """One kernel build: what is compiled in."""

    layer: Layer
    variant: WinogradVariant
    partition: Partition
    ticket: bool = True
    trace: bool = False
    spin_limit_ns: int = 2_000_000_000
    k_step: int = GEMM_K_STEP  # channels per GEMM main-loop step; the contract's value unless experimenting
    mode: str = "static"  # megasim.contract.scheduling
    min_blocks: int = 0  # launch bounds' blocks per SM; 0: the kernels' default
    gemm: str = "generic"  # the GEMM task's body (GEMM_BODIES); "warp" only where gemm_warp_tiled allows
    layout: str = "nhwc"  # of x and y (LAYOUTS): "nchw" reads and writes a torch model's default layout
    self_reset: bool = False  # the megakernel restores its control words itself: no reset copy per launch
    precision: str = "fp32"  # the GEMM's products (PRECISIONS): "3xtf32" swaps the warp body for gemm_tf32x3.cuh

    def __post_init__(self):
        check_mode(self.mode)
        if self.gemm not in GEMM_BODIES:
            raise MegasimError(f"unknown GEMM body {self.gemm!r}; known: {', '.join(GEMM_BODIES)}")
        if self.precision not in PRECISIONS:
            raise MegasimError(f"unknown precision {self.precision!r}; known: {', '.join(PRECISIONS)}")
        if self.layout not in LAYOUTS:
            raise MegasimError(f"unknown layout {self.layout!r}; known: {', '.join(LAYOUTS)}")
        if self.mode in RESIDENT_MODES and not self.ticket:
            raise MegasimError(f"the {self.mode} mode takes its tasks from an atomic counter; it has no raw-blockIdx build")

    @staticmethod
    def of(graph: TaskGraph, **kw) -> KernelConfig:
        return KernelConfig(layer=graph.layer, variant=graph.variant, partition=graph.partition, **kw)

    def shape_key(self) -> tuple:
        """The layer without its name: two layers of one shape share a build."""
        lay = self.layer
        return (lay.n, lay.c, lay.h, lay.w, lay.k, self.variant.m, self.partition,
                self.ticket, self.trace, self.spin_limit_ns, self.k_step, self.mode, self.min_blocks, self.gemm,
                self.layout, self.self_reset, self.precision)

    def mismatches(self, graph: TaskGraph) -> list[str]:
        """Fields where `graph` differs from this build, as 'where.field: built X, graph Y'."""
        out = []
        for where, mine, theirs in (("layer", self.layer, graph.layer), ("partition", self.partition, graph.partition),
                                    ("variant", self.variant, graph.variant)):
            for f in fields(mine):
                if f.name == "name":
                    continue
                a, b = getattr(mine, f.name), getattr(theirs, f.name)
                if a != b:
                    out.append(f"{where}.{f.name}: built {a}, graph {b}")
        return out

    def check(self, graph: TaskGraph) -> None:
        bad = self.mismatches(graph)
        if bad:
            raise MegasimError("kernel was compiled for another problem: " + "; ".join(bad))


def _literal(v) -> str:
    f = float(np.float32(float(v)))
    return f"{f!r}f" if f == int(f) else f"{f.hex()}f"


def _matrix_function(name: str, mat) -> str:
    """y[r*SO] = sum_j mat[r][j] * x[j*SI], zero terms skipped, left-to-right rounding."""
    lines = [f"template <int SI, int SO>", f"__device__ __forceinline__ void {name}(const float* x, float* y) {{"]
    for r, row in enumerate(mat):
        expr = None
        for j, c in enumerate(row):
            if c == 0:
                continue
            xj = f"x[{j} * SI]"
            if expr is None:
                expr = xj if c == 1 else f"-{xj}" if c == -1 else f"__fmul_rn({_literal(c)}, {xj})"
            elif c == 1:
                expr = f"__fadd_rn({expr}, {xj})"
            elif c == -1:
                expr = f"__fsub_rn({expr}, {xj})"
            else:
                expr = f"__fmaf_rn({_literal(c)}, {xj}, {expr})"
        lines.append(f"    y[{r} * SO] = {expr or '0.0f'};")
    lines.append("}")
    return "\n".join(lines)


def config_header(cfg: KernelConfig) -> str:
    """The text of ms_config.cuh for one build."""
    lay, part, var = cfg.layer, cfg.partition, cfg.variant
    geo = Geometry.of(lay, var, part)
    check_kernel_build(lay, part, cfg.gemm, cfg.k_step, cfg.precision)
    plan, (bk, stages) = gemm_plan(part), gemm_ring(part, cfg.k_step)
    vec_c, vec_k = gemm_vector_loads(lay, part)
    defs = {
        "MS_N": lay.n, "MS_C": lay.c, "MS_H": lay.h, "MS_W": lay.w, "MS_K": lay.k,
        "MS_M": var.m, "MS_ALPHA": var.alpha,
        "MS_TILES_H": geo.tiles_h, "MS_TILES_W": geo.tiles_w, "MS_NUM_TILES": geo.num_tiles,
        "MS_NG": geo.n_g, "MS_SI": geo.s_i, "MS_SG": geo.s_g, "MS_SO": geo.s_o, "MS_NF": geo.n_f,
        "MS_NEB": geo.n_eb, "MS_NKB": geo.n_kb,
        "MS_TPG": part.tiles_per_group, "MS_CPI": part.input_channels_per_task, "MS_EPG": part.gemm_mats_per_task,
        "MS_KPG": part.gemm_k_per_task, "MS_KPO": part.output_channels_per_task, "MS_KPF": part.filter_k_per_task,
        "MS_NT": part.threads, "MS_GE": plan.ge, "MS_TM": plan.tm, "MS_TN": plan.tn,
        "MS_VEC_C": int(vec_c), "MS_VEC_K": int(vec_k),
        "MS_BK": bk, "MS_GEMM_WARP": int(cfg.gemm == "warp"), "MS_USE_TICKET": int(cfg.ticket), "MS_TRACE": int(cfg.trace), "MS_SPIN_LIMIT_NS": f"{cfg.spin_limit_ns}ull",
        "MS_NUM_TASKS": geo.num_tasks, "MS_PERSISTENT": int(cfg.mode in RESIDENT_MODES),
        "MS_READY_QUEUE": int(cfg.mode == "ready_queue"),
        **({"MS_MIN_BLOCKS": cfg.min_blocks} if cfg.min_blocks else {}),
        "MS_STAGES": stages,
        **({"MS_NCHW": 1} if cfg.layout == "nchw" else {}),
        **({"MS_SELF_RESET": 1} if cfg.self_reset else {}),
        **({"MS_GEMM_TF32X3": 1} if cfg.precision == "3xtf32" else {}),
    }
    mats = winograd_matrices(var.m)
    body = ["// Generated by gpu/backend.py config_header(); one kernel build.", "#pragma once",
            "#define MS_CONFIG_INCLUDED 1"]
    body += [f"#define {k} {v}" for k, v in defs.items()]
    body += [_matrix_function("ms_g", mats.G), _matrix_function("ms_bt", mats.BT), _matrix_function("ms_at", mats.AT)]
    return "\n".join(body) + "\n"


DEFAULT_CONFIG = KernelConfig(Layer(n=2, c=8, h=10, w=9, k=8, name="default"), WinogradVariant(4),
                              Partition(tiles_per_group=32, input_channels_per_task=8, gemm_mats_per_task=4,
                                        gemm_k_per_task=64, output_channels_per_task=8, filter_k_per_task=4))


def kernel_source(cfg: KernelConfig, sources: tuple[str, ...] = SOURCES) -> str:
    """One translation unit: the config, then each kernel file (they include winograd.cuh)."""
    return config_header(cfg) + "".join((KERNEL_DIR / name).read_text() for name in sources)


class CompiledModule:
    """A CuPy module plus the config it was built for."""

    def __init__(self, cfg: KernelConfig, raw):
        self.config = cfg
        self.raw = raw
        self._functions = {}

    def function(self, name: str):
        if name not in self._functions:
            self._functions[name] = self.raw.get_function(name)
        return self._functions[name]

    def check(self, graph: TaskGraph) -> None:
        self.config.check(graph)


_CACHE: dict[tuple, CompiledModule] = {}


def module(cfg: KernelConfig, sources: tuple[str, ...] = SOURCES) -> CompiledModule:
    """Compile (or fetch from the cache) the module of `sources` for `cfg`."""
    key = (cfg.shape_key(), sources)
    if key not in _CACHE:
        c = require_cupy()
        raw = c.RawModule(code=kernel_source(cfg, sources), options=COMPILE_OPTIONS + (f"-I{KERNEL_DIR}",))
        raw.compile()
        _CACHE[key] = CompiledModule(cfg, raw)
    return _CACHE[key]


__all__ = ["cp", "require_cupy", "compiler_id", "KERNEL_FUNCTIONS", "device_info", "kernel_build_hash", "git_commit", "KernelConfig", "LAYOUTS",
           "measurement_header",
           "config_header", "kernel_source", "DEFAULT_CONFIG", "CompiledModule", "module", "KERNEL_DIR", "TRACE_ONLY"]
