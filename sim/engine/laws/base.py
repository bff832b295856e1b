"""What a model law is, and the registry the profiles name laws from.

A law is one variant of one engine mechanism with its constants: a frozen dataclass whose fields are the
constants (each with its range and its declared default), registered under the name a profile's `[model]`
`laws` list uses. The engine asks its `Model` for each mechanism; the one law the profile names for it
answers, and where none is named the engine runs its default. So an experiment adds a law in one file
(constants, range, the hook it answers) instead of patching the engine, and a profile says in words which
laws its predictions rest on.

The mechanisms, each a method a law may answer (`MECHANISMS`):

- `fp32_sharing`: who shares an SM's FP32 issue rate. Default: the blocks whose FP32 job is still running,
  each capped at 2 x threads FLOPs per cycle.
- `gemm_constants`: the GEMM task's efficiency, step and fixed cycles for the build's GEMM body. Default:
  the `gemm` entries of the model's per-type constants.
- `work_factors`: a factor on each block's work beyond the lognormal spread. Default: none.
- `neighbour_stretch`: how much slower a block of each type works beside a working GEMM block on its SM.
  Default: not at all.
- `queue_pop`: what taking a task from the ready queue costs (ready_queue mode only). Default: nothing
  beyond the persistent loop's per-task overhead.
- `gemm_precision`: what a GEMM task is worth in FP32 work when its products run on tensor cores (a
  3xtf32 run). Default: none; a 3xtf32 run without such a law is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.registry import Registry

MODEL_LAWS: Registry = Registry("model law")
MECHANISMS = ("fp32_sharing", "gemm_constants", "work_factors", "neighbour_stretch", "queue_pop", "gemm_precision")


@dataclass(frozen=True, kw_only=True)
class Law:
    """A registered law: its fields are its constants; `mechanism` names the engine hook it answers."""

    __pydantic_config__ = {"extra": "forbid"}
    name: ClassVar[str]
    mechanism: ClassVar[str]

    def check(self, origin: str) -> None:
        """What a constant's range cannot say; raise MegasimError naming `origin`."""


def per_type(table: dict, missing: float) -> np.ndarray:
    """float64[op]: a constant given per task type by name (a law's table), `missing` where a type has none."""
    return np.array([float(table.get(OP_NAMES[op], missing)) for op in Op])


def law(name: str):
    """Register a `Law` subclass under `name` (the spelling in profiles and on the command line)."""
    def deco(cls):
        if cls.mechanism not in MECHANISMS:
            raise ValueError(f"law {name!r} answers an unknown mechanism {cls.mechanism!r}")
        cls.name = name
        MODEL_LAWS.register(name)(cls)
        return cls
    return deco
