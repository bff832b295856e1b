"""What is being convolved and how it is cut into thread-block tasks.

`Layer` is the convolution (3x3, stride 1, pad 1, so the output is H x W).
`WinogradVariant` picks F(m x m, 3 x 3). `Partition` holds every knob that
decides how the work splits into thread blocks; both executors compile these
numbers in, so a kernel built for one partition refuses a graph of another.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import IntEnum
from typing import Annotated

from megasim.contract.errors import MegasimError
from megasim.io.schema import Number

FLOAT_BYTES = 4
VARIANTS = (2, 4, 6)  # the m of F(m x m, 3 x 3) that the transforms and kernels implement


class Op(IntEnum):
    """Task types; the values are the opcodes the megakernel switches on."""

    FILTER_TRANSFORM = 0
    INPUT_TRANSFORM = 1
    GEMM = 2
    OUTPUT_TRANSFORM = 3


# The one spelling of each op in files, profiles (compute_efficiency keys), traces and messages.
OP_NAMES = {op: op.name.lower() for op in Op}


INT32_LIMIT = 2**31  # every size the kernels index with a 32-bit int
Dimension = Annotated[int, Number(int, gt=0, lt=INT32_LIMIT)]  # a size in a file: the rule `_positive` checks


def _positive(owner: str, **values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or not 0 < v < INT32_LIMIT:
            raise MegasimError(f"{owner}: {name} must be a positive integer below 2^31, got {v!r}")


@dataclass(frozen=True)
class Layer:
    """A 3x3, stride-1, pad-1 convolution: N images of C x H x W in, K channels out."""

    n: int = field(metadata={"help": "batch size"})
    c: int = field(metadata={"help": "input channels"})
    h: int = field(metadata={"help": "input (= output) height"})
    w: int = field(metadata={"help": "input (= output) width"})
    k: int = field(metadata={"help": "output channels"})
    name: str = "custom"

    def __post_init__(self):
        _positive(f"layer {self.name}", n=self.n, c=self.c, h=self.h, w=self.w, k=self.k)

    @property
    def direct_flops(self) -> int:
        """FLOPs of the direct convolution: the yardstick for 'effective' rates."""
        return 2 * self.n * self.k * self.h * self.w * self.c * 9

    @property
    def min_dram_bytes(self) -> int:
        """Bytes any implementation must move: x and w read once, y written once (FP32).

        The DRAM floor of the simulator's report and of `megasim bench`, and the size of
        one input set when timing rotates over sets larger than L2.
        """
        return FLOAT_BYTES * (self.n * self.h * self.w * (self.c + self.k) + 9 * self.c * self.k)

    def shape(self) -> str:
        return f"N={self.n} C={self.c} H={self.h} W={self.w} K={self.k}"


@dataclass(frozen=True)
class WinogradVariant:
    """F(m x m, 3 x 3): alpha = m + 2 points per dimension."""

    m: int = 4

    def __post_init__(self):
        if self.m not in VARIANTS:
            raise MegasimError(f"Winograd variant m={self.m} is not supported; choose 2, 4 or 6")

    @property
    def alpha(self) -> int:
        return self.m + 2

    def tiles(self, layer: Layer) -> tuple[int, int]:
        """Tile rows and columns; ragged edge tiles are padded, not dropped."""
        return -(-layer.h // self.m), -(-layer.w // self.m)


@dataclass(frozen=True)
class Partition:
    """How the convolution is cut into tasks.

    A task group covers `tiles_per_group` consecutive tiles (row-major over
    image, tile row, tile column). Its input-transform tasks each take
    `input_channels_per_task` channels of all its tiles; its GEMM tasks each
    multiply the group's (t x C) matrices by (C x gemm_k_per_task) filter
    slices for `gemm_mats_per_task` of the alpha^2 Winograd points; its
    output-transform tasks each take `output_channels_per_task` output
    channels. A filter-transform task takes `filter_k_per_task` filters.
    """

    tiles_per_group: int = field(default=32, metadata={"help": "t: tiles per task group"})
    input_channels_per_task: int = field(default=32, metadata={"help": "channels per input-transform block"})
    gemm_mats_per_task: int = field(default=4, metadata={"help": "Winograd points (alpha^2 matrices) per GEMM block"})
    gemm_k_per_task: int = field(default=64, metadata={"help": "output channels per GEMM block"})
    output_channels_per_task: int = field(default=32, metadata={"help": "channels per output-transform block"})
    filter_k_per_task: int = field(default=4, metadata={"help": "filters per filter-transform block"})
    threads: int = field(default=256, metadata={"help": "threads per block, every stage"})

    def __post_init__(self):
        _positive("partition", **{f.name: getattr(self, f.name) for f in fields(self)})
        if self.threads % 32 or self.threads > 1024:
            raise MegasimError(f"partition: threads must be a multiple of 32 up to 1024, got {self.threads}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Partition:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise MegasimError(f"partition: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)
