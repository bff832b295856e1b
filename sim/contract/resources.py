"""The kernel resource plan: the one place that decides occupancy.

A thread block of each CUDA kernel holds threads, registers and shared
memory on its SM; how many blocks fit at once (occupancy) is the model's most
important input. The CUDA build and the SimPy engine both read this plan: the
build compiles its GEMM register blocking (`gemm_plan`) and cp.async ring
(`gemm_ring`) in, and the engine sizes its SM slots with `blocks_per_sm` of
the same footprints, so the two cannot model different occupancies.

Shared memory follows from the ring's arithmetic. Registers are what the
compiler allocates, which no formula predicts: they come from
`kernel_registers.json`, the registers of every build the search space, the
corpus and the networks make, as CuPy compiles them (NVRTC for sm_90, the
default k step), read on a device with the driver's occupancy beside them
(docs/results/occupancy_device; tests/sim/test_occupancy_plan.py checks and
rewrites it). nvcc's offline ptxas allocates differently for a quarter of the
kernels, enough to change 14 of 1,490 occupancies. A build is its partition
and its `Flavor`: the Winograd variant and whether the GEMM loads C and K rows
16 bytes at a time change the code, and its registers with it (a C = 3 layer's scalar GEMM takes 162 where the
vector one takes 117: three blocks an SM, not four), and so do the GEMM body and its precision (YOLOv3-1's
F(4) warp megakernel takes 122 in FFMA and 148 in 3xTF32: three blocks an SM, not four).
A row for the layer's own sizes comes first where the table has one (`Flavor.shape`). A 3xTF32 flavor outside
the table takes its FFMA twin's figures; a warp-body flavor outside it the generic
body's figures of its variant; another flavor outside it its partition's F(4), vector-load figures; a partition outside it
(another k step, a hand-made partition) the per-stage `ESTIMATED_REGISTERS`.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from megasim.contract.errors import MegasimError
from megasim.contract.problem import FLOAT_BYTES, OP_NAMES, Op, Partition

GEMM_BODIES = ("generic", "warp")  # the GEMM task's device functions: winograd.cuh, gemm_warp.cuh
PRECISIONS = ("fp32", "3xtf32")  # a GEMM's products: FP32 FFMA, or three TF32 tensor-core passes (gemm_tf32x3.cuh)
GEMM_K_STEP = 16  # channels staged through shared memory per main-loop step (gpu/kernels/winograd.cuh)
SMEM_STATIC_LIMIT = 48 * 1024  # a kernel's static __shared__ arrays may not exceed this
MEGAKERNEL_SMEM_BYTES = 48  # the megakernel's own task words, block id and go flag (megakernel.cu), padded
REGISTER_TABLE = Path(__file__).with_name("kernel_registers.json")
WARP_ALLOCATION_GRANULARITY = 4  # warps the register file is handed out in (Volta to Hopper)
ESTIMATED_REGISTERS = {"filter_transform": 96, "input_transform": 88, "output_transform": 56, "gemm_small": 128, "gemm_8x8": 168}


@dataclass(frozen=True)
class StageResources:
    """What one thread block of a kernel holds on its SM; decides occupancy."""

    threads: int = field(metadata={"help": "threads per block"})
    regs_per_thread: int = field(metadata={"help": "registers per thread"})
    smem_bytes: int = field(default=0, metadata={"help": "static shared memory per block"})

    def __post_init__(self):
        if self.threads <= 0 or self.threads % 32 or self.threads > 1024:
            raise MegasimError(f"threads per block must be a multiple of 32 up to 1024, got {self.threads}")
        if self.regs_per_thread <= 0:
            raise MegasimError(f"regs_per_thread must be positive, got {self.regs_per_thread}")
        if self.smem_bytes < 0:
            raise MegasimError(f"smem_bytes must be >= 0, got {self.smem_bytes}")


@dataclass(frozen=True)
class Flavor:
    """What besides the partition a build compiles differently: the variant F(m x m, 3 x 3), whether the
    GEMM loads C and K rows 16 bytes at a time (`gemm_vector_loads`: MS_VEC_C, MS_VEC_K), the GEMM
    task's body (`GEMM_BODIES`) and its products' precision (`PRECISIONS`).

    The layer's sizes are compiled in too, and move registers a little; `shape`, the layer's (n, c, h, w, k),
    picks a table row of its own where one was measured (the warp body's F(2) and F(4) megakernels take 138
    registers for ResNet-1 and 122 for YOLOv3-1 on one partition: three blocks an SM against four). Equality
    leaves it out, so the builds of one partition and flavor are one build to the table's other rows."""

    m: int = 4
    vector_c: bool = True
    vector_k: bool = True
    gemm: str = "generic"
    precision: str = "fp32"
    shape: tuple[int, ...] | None = field(default=None, compare=False)

    @staticmethod
    def of(layer, variant, part: Partition, gemm: str = "generic", precision: str = "fp32") -> "Flavor":
        """The flavor of the build of `layer` under `variant` (a WinogradVariant), `part`, GEMM body and
        precision."""
        return Flavor(variant.m, *gemm_vector_loads(layer, part), gemm, precision, layer_shape(layer))

    @staticmethod
    def of_graph(graph, gemm: str = "generic", precision: str = "fp32") -> "Flavor":
        """The flavor of a TaskGraph's build with GEMM body `gemm` at `precision`."""
        return Flavor.of(graph.layer, graph.variant, graph.partition, gemm, precision)


DEFAULT_FLAVOR = Flavor()


def layer_shape(layer) -> tuple[int, ...]:
    """The sizes of `layer` a build compiles in, as a register table row names them (`shape`)."""
    return (layer.n, layer.c, layer.h, layer.w, layer.k)


@dataclass(frozen=True)
class GemmPlan:
    """GE Winograd points at once; each thread a TM x TN register block of one point."""

    ge: int
    tm: int
    tn: int


def gemm_plan(part: Partition) -> GemmPlan:
    """Largest register block (at most 8 x 8) that tiles the GEMM task, fewest points at once.

    A thread's TM tiles are rows ty, ty + TY, ... (any TM works: V is read
    4 channels at a time); its TN columns come in float4 runs when TN >= 4.
    """
    t, kpg, epg, nt = part.tiles_per_group, part.gemm_k_per_task, part.gemm_mats_per_task, part.threads
    best = None
    for ge in range(1, epg + 1):
        if epg % ge:
            continue
        for tm in (1, 2, 4, 8):
            for tn in (1, 2, 4, 8):
                if t % tm or kpg % tn or ge * (t // tm) * (kpg // tn) != nt:
                    continue
                key = (tm * tn, -ge, min(tn, 4), tm)
                if best is None or key > best[0]:
                    best = (key, GemmPlan(ge, tm, tn))
    if best is None:
        raise MegasimError(
            f"partition {part}: the GEMM task cannot be tiled by {nt} threads; need ge | gemm_mats_per_task "
            f"with ge * (tiles_per_group/TM) * (gemm_k_per_task/TN) == threads, TM, TN in 1, 2, 4, 8")
    return best[1]


def gemm_warp_tiled(layer, part: Partition, k_step: int = GEMM_K_STEP) -> bool:
    """Whether the build compiles the warp-tiled GEMM body (gpu/kernels/gemm_warp.cuh) instead of the
    generic one: one point at a time, 8 x 4 or 8 x 8 per thread, a 4 x 8 lane grid that tiles the task,
    whole channel steps and 16-byte rows of K. Same ring, same shared memory, same output bits."""
    plan = gemm_plan(part)
    if plan.ge != 1 or plan.tm != 8 or plan.tn not in (4, 8):
        return False
    wm, wn = 4 * plan.tm, 8 * plan.tn
    if part.tiles_per_group % wm or part.gemm_k_per_task % wn:
        return False
    if (part.tiles_per_group // wm) * (part.gemm_k_per_task // wn) * 32 != part.threads:
        return False
    return layer.c % gemm_ring(part, k_step)[0] == 0 and layer.k % 4 == 0


def check_warp_tiled(layer, part: Partition, k_step: int = GEMM_K_STEP) -> None:
    """Refuse a warp-body build the warp tiling does not fit (`gemm_warp_tiled`): the kernels' config and the
    simulator's build both ask this, so neither runs a build the other refuses."""
    if not gemm_warp_tiled(layer, part, k_step):
        raise MegasimError(f"{layer.name}: the warp-tiled GEMM body does not tile partition {part.to_dict()} (it "
                           "needs one Winograd point per GEMM task, an 8 x 4 or 8 x 8 register block, a 4 x 8 lane "
                           "grid covering the task, whole channel steps and K a multiple of 4)")


def gemm_body(layer, part: Partition, gemm: str = "generic") -> str:
    """The shape of the GEMM code a build runs for this layer and partition, as the law `gemm_body_laws`
    names it: the block's threads, each thread's register block, and "-scalar" where it loads its tiles a
    float at a time, synchronously (C or K not a multiple of 4: MS_VEC_C, MS_VEC_K), instead of by 16-byte
    cp.async; e.g. "t128-8x8" for the generic body and "w128-8x8" for the warp-tiled one (`gemm_warp.cuh`,
    always vector loads). What a block costs beyond its FLOPs differs with them (the 8 x 8 block's epilogue
    writes twice the outputs; the warp tiling reads shared memory without bank conflicts), so each has its
    own law."""
    plan = gemm_plan(part)
    if gemm == "warp":
        return f"w{part.threads}-{plan.tm}x{plan.tn}"
    return f"t{part.threads}-{plan.tm}x{plan.tn}" + ("" if all(gemm_vector_loads(layer, part)) else "-scalar")


def gemm_vector_loads(layer, part: Partition) -> tuple[bool, bool]:
    """(V rows, U rows) the GEMM loads 16 bytes at a time by cp.async: C, and K and its per-task share, are
    multiples of 4 floats. Otherwise that operand is loaded a float at a time (MS_VEC_C, MS_VEC_K)."""
    return layer.c % 4 == 0, layer.k % 4 == 0 and part.gemm_k_per_task % 4 == 0


def warp_partition(layer, part: Partition, k_step: int = GEMM_K_STEP) -> Partition:
    """The partition a warp-body build uses: 128 output channels per GEMM task where K allows and the
    warp tiling fits (the GEMM study's best shape: docs/results/bench_h200/warp_gemm/adopt_h200.json), else `part`."""
    if layer.k >= 128 and part.gemm_k_per_task != 128:
        wide = replace(part, gemm_k_per_task=128)
        if gemm_warp_tiled(layer, wide, k_step):
            return wide
    return part


def gemm_smem_bytes(part: Partition, k_step: int, stages: int) -> int:
    """Shared memory of the GEMM ring: per stage, V [ge][t][k_step+4] and U [ge][k_step][kpg rounded to 4]."""
    ge = gemm_plan(part).ge
    per_stage = ge * (part.tiles_per_group * (k_step + 4) + k_step * (-(-part.gemm_k_per_task // 4) * 4))
    return stages * per_stage * FLOAT_BYTES


def gemm_ring(part: Partition, k_step: int = GEMM_K_STEP) -> tuple[int, int]:
    """(channels per step, stages) of the cp.async ring: three stages of `k_step` when they fit in
    48 KiB of static shared memory beside the megakernel's own words, else two, else k_step halved
    (big tiles x many points)."""
    if k_step not in (4, 8, 16, 32):
        raise MegasimError(f"k_step must be 4, 8, 16 or 32 channels per GEMM step, got {k_step}")
    bk = k_step
    while bk >= 4:
        for stages in (3, 2):
            if gemm_smem_bytes(part, bk, stages) + MEGAKERNEL_SMEM_BYTES <= SMEM_STATIC_LIMIT:
                return bk, stages
        bk //= 2
    raise MegasimError(f"GEMM stage needs {gemm_smem_bytes(part, 4, 2) + MEGAKERNEL_SMEM_BYTES} bytes of static "
                       f"shared memory (> 48 KiB) even at 4 channels and two stages: lower tiles_per_group, "
                       f"gemm_k_per_task or gemm_mats_per_task")


def check_kernel_build(layer, part: Partition, gemm: str = "generic", k_step: int = GEMM_K_STEP,
                       precision: str = "fp32") -> None:
    """Refuse a build the CUDA kernels cannot compile: the GEMM task must tile onto the threads
    (`gemm_plan`), its cp.async ring must fit static shared memory (`gemm_ring`), and a warp-body build must
    fit the warp tiling (`check_warp_tiled`). `gpu.backend.config_header` and the SimPy interpreter both ask
    this one rule, so the simulator predicts no build the kernels refuse, and refuses none they run."""
    if gemm not in GEMM_BODIES:
        raise MegasimError(f"unknown GEMM body {gemm!r}; known: {', '.join(GEMM_BODIES)}")
    gemm_plan(part)
    gemm_ring(part, k_step)
    if gemm == "warp":
        check_warp_tiled(layer, part, k_step)
    check_precision(part, gemm, precision, k_step)


def check_precision_body(gemm: str, precision: str) -> None:
    """A 3xTF32 build runs the tensor-core body on the warp body's tiling (gpu/kernels/gemm_tf32x3.cuh)."""
    if precision not in PRECISIONS:
        raise MegasimError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    if precision != "fp32" and gemm != "warp":
        raise MegasimError(f"precision {precision!r} runs on the warp GEMM body's tiling, not the {gemm!r} body")


def check_precision(part: Partition, gemm: str, precision: str, k_step: int = GEMM_K_STEP) -> None:
    """`check_precision_body`, and a 3xTF32 build's mma steps take 8 channels at a time from a ring of whole
    8-channel steps."""
    check_precision_body(gemm, precision)
    if precision == "fp32":
        return
    bk = gemm_ring(part, k_step)[0]
    if bk % 8:
        raise MegasimError(f"precision {precision!r} needs GEMM steps of a multiple of 8 channels; this "
                           f"partition's ring takes {bk}")


def partition_key(part: Partition, flavor: Flavor = DEFAULT_FLAVOR) -> str:
    """The register table's key: the partition's fields in a fixed order, and the flavor (its GEMM body only
    where it is not the generic one, its precision only where it is not FP32, so older rows keep their keys)."""
    body = ([flavor.gemm] if flavor.gemm != "generic" else []) + ([flavor.precision] if flavor.precision != "fp32" else [])
    return json.dumps([part.to_dict(), flavor.m, flavor.vector_c, flavor.vector_k, *body], sort_keys=True)


def flavor_of_row(row: dict) -> Flavor:
    """A table row's flavor (rows without the fields are F(4) with vector loads and the generic body)."""
    return Flavor(row.get("variant", 4), *row.get("vector_loads", (True, True)), row.get("gemm", "generic"),
                  row.get("precision", "fp32"))


@lru_cache(maxsize=1)
def _register_table() -> dict:
    rows = json.loads(REGISTER_TABLE.read_text())["builds"]
    return {partition_key(Partition(**row["partition"]), flavor_of_row(row)) + json.dumps(row.get("shape", [])):
            row["registers"] for row in rows}


def registers(part: Partition, kernel: str, k_step: int = GEMM_K_STEP, flavor: Flavor = DEFAULT_FLAVOR) -> int:
    """Registers per thread of one kernel ('megakernel' or a stage name) of this build, as CuPy compiles it."""
    measured = _measured_registers(part, k_step, flavor, flavor.shape)
    if measured is not None:
        return measured[kernel]
    if kernel in ("gemm", "megakernel"):
        plan = gemm_plan(part)
        return ESTIMATED_REGISTERS["gemm_8x8" if plan.tm * plan.tn >= 64 else "gemm_small"]
    return ESTIMATED_REGISTERS[kernel]


@lru_cache(maxsize=4096)
def _measured_registers(part: Partition, k_step: int, flavor: Flavor, shape: tuple | None) -> dict | None:
    """The table row a build takes, most specific first (`shape` apart: `Flavor` equality leaves it out)."""
    table = _register_table() if k_step == GEMM_K_STEP else {}
    keys = [partition_key(part, flavor) + json.dumps(list(shape or [])), partition_key(part, flavor) + "[]",
            partition_key(part, replace(flavor, precision="fp32")) + "[]",
            partition_key(part, replace(flavor, gemm="generic", precision="fp32")) + "[]", partition_key(part) + "[]"]
    return next((table[k] for k in keys if k in table), None)


def stage_resources(part: Partition, op: Op, k_step: int = GEMM_K_STEP,
                    flavor: Flavor = DEFAULT_FLAVOR) -> StageResources:
    """The block of one non-fused kernel; only the GEMM holds shared memory (its ring)."""
    smem = gemm_smem_bytes(part, *gemm_ring(part, k_step)) if op == Op.GEMM else 0
    return StageResources(part.threads, registers(part, OP_NAMES[op], k_step, flavor), smem)


def megakernel_resources(part: Partition, k_step: int = GEMM_K_STEP,
                         flavor: Flavor = DEFAULT_FLAVOR) -> StageResources:
    """The megakernel's one block shape: every stage's code in one kernel, the GEMM ring plus its task words."""
    smem = gemm_smem_bytes(part, *gemm_ring(part, k_step)) + MEGAKERNEL_SMEM_BYTES
    return StageResources(part.threads, registers(part, "megakernel", k_step, flavor), smem)


def blocks_per_sm(gpu, res: StageResources) -> int:
    """Occupancy: how many blocks of this footprint fit on one SM of `gpu` (a GPUSpec) at once.

    Registers go to warps in 256-register units, and the warps the register file holds are counted in
    fours (`WARP_ALLOCATION_GRANULARITY`: an SM's four schedulers each own a quarter of it), before they
    are split into blocks. The fours matter for blocks of 3 warps: at 96 registers a thread the file holds
    21 warps, 20 in fours, so 6 blocks of 96 threads and not 7. With them the rule gives the driver's
    occupancy (cuOccupancyMaxActiveBlocksPerMultiprocessor) for all 1,490 kernels of the plan's builds
    (docs/results/occupancy_device)."""
    warps = math.ceil(res.threads / 32)
    regs_per_warp = math.ceil(res.regs_per_thread * 32 / 256) * 256
    register_warps = gpu.regs_per_sm // regs_per_warp // WARP_ALLOCATION_GRANULARITY * WARP_ALLOCATION_GRANULARITY
    limits = [gpu.max_blocks_per_sm, gpu.max_threads_per_sm // (warps * 32), register_warps // warps]
    if res.smem_bytes:
        if res.smem_bytes > gpu.max_smem_per_block_bytes:
            raise MegasimError(f"{res.smem_bytes} B of shared memory per block exceeds "
                               f"{gpu.name}'s {gpu.max_smem_per_block_bytes} B")
        limits.append(gpu.smem_per_sm_bytes // res.smem_bytes)
    fit = min(limits)
    if fit < 1:
        raise MegasimError(f"a block of {res} does not fit on one {gpu.name} SM")
    return fit
