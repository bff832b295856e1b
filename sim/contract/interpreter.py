"""One interface for the interpreters of a (TaskGraph, Mapping): the SimPy engine, the NumPy emulator, the GPU.

megasim's claim is that one graph and one mapping drive every executor, so each checks the others.
That holds only if they are asked the same question and answer in the same shape: an `Interpreter`
takes a graph, a mapping and a `RunConfig` and returns an `Execution` whose per-TB records are
`TB_RECORD`s in logical block order. What only one interpreter needs (the engine's GPU model and
dispatch policy, the kernel build options of the GPU) goes to that interpreter's constructor, so
calibration, comparison and search change interpreter without changing how they call it (as Kernel
Tuner's simulation and hardware runners share one interface).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import TaskGraph
from megasim.contract.mapping import Mapping
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.records import empty_records
from megasim.contract.scheduling import check_mode

WHOLE_LAUNCHES = ("fused", "nonfused")
STAGE_LAUNCHES = {name: op for op, name in OP_NAMES.items()}


@dataclass(frozen=True, eq=False)
class RunConfig:
    """What to run, the same for every interpreter.

    `launch`: "fused" (the megakernel in mapping order), "nonfused" (the four stage kernels in order;
    the mapping is not used), or a stage name ("filter", "input", "gemm", "output": that non-fused
    kernel alone, which only a timing model can run, since its inputs come from the other stages).
    `inputs`: (x, w) or (x, w, y) sets in the interpreter's own arrays; none means one random set drawn
    from `seed`; timed runs rotate over them. `reps`: timed launches (interpreters with a clock of
    their own; 0: run once). `seed` also draws the engine's per-block work variation. `mode`: how the
    megakernel's blocks find their tasks (`megasim.contract.scheduling`); the output never depends on it.
    """

    launch: str = "fused"
    seed: int = 0
    inputs: tuple = ()
    reps: int = 0
    mode: str = "static"

    def __post_init__(self):
        check_mode(self.mode)
        if self.launch not in WHOLE_LAUNCHES and self.launch not in STAGE_LAUNCHES:
            raise MegasimError(f"unknown launch {self.launch!r}; known: "
                               f"{', '.join([*WHOLE_LAUNCHES, *STAGE_LAUNCHES])}")


@dataclass(frozen=True, eq=False)
class Execution:
    """One interpreter's answer: per-TB records, the run's time where the interpreter has a clock.

    `time_us` and the records' times are NaN for an interpreter without one (the emulator);
    `launch_us` is each launch's own span; `output` is y where the interpreter computes it;
    `native` is the interpreter's full result in its own terms (the engine's RawRun, the GPU's
    timing statistics) for callers that need more than the shared fields.
    """

    interpreter: str
    launch: str
    records: np.ndarray
    time_us: float = math.nan
    launch_us: tuple = ()
    output: Any = None
    native: Any = None


@runtime_checkable
class Interpreter(Protocol):
    name: str

    def run(self, graph: TaskGraph, mapping: Mapping | None, config: RunConfig = RunConfig()) -> Execution:
        """Run `config.launch` of `graph` (under `mapping` when fused) and report every block."""


def block_order(graph: TaskGraph, mapping: Mapping | None, launch: str) -> np.ndarray:
    """The task each logical block runs, blocks of successive launches one after another."""
    if launch == "fused":
        if mapping is None:
            raise MegasimError("a fused launch needs a mapping")
        return np.asarray(mapping.order, dtype=np.int64)
    ops = list(Op) if launch == "nonfused" else [STAGE_LAUNCHES[launch]]
    return np.concatenate([graph.tasks_of(op) for op in ops])


def untimed_records(graph: TaskGraph, order: np.ndarray) -> np.ndarray:
    """Records of blocks run in `order` by an interpreter that did not time them: no SM, NaN times."""
    rec = empty_records(len(order))
    rec["block"] = np.arange(len(order))
    rec["task"] = order
    rec["op"] = graph.op[order]
    for name in ("dispatch_us", "start_us", "ready_us", "end_us"):
        rec[name] = np.nan
    return rec


def require_whole(interpreter: str, launch: str) -> None:
    """Refuse a single stage where the interpreter computes data: that stage's inputs would not exist."""
    if launch not in WHOLE_LAUNCHES:
        raise MegasimError(f"the {interpreter} interpreter runs whole convolutions (launch 'fused' or "
                           f"'nonfused'), not the {launch!r} stage alone")
