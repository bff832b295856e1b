"""Per-block state of one run as NumPy columns.

A VGG-scale run has tens of thousands of blocks per launch, and a study may
ask for a million. Python lists of floats cost 32 bytes an entry (a pointer
and a float object); a float64 column costs 8. The engine reads and writes
the columns through `memoryview`s, which hand out plain Python ints and
floats: NumPy scalars would be slower in the arithmetic that follows than
the lists were. The columns become the `TB_RECORD` array at the end without
a copy through Python.

What a block will cost does not depend on when it runs, except its DRAM
bytes (its L2 misses): its FP32 work, its L2 bytes, its latency floor and
its added latency are computed here for every block at once, in NumPy, with
the same float operations in the same order as one block at a time would
take them, so the hot path only reads them.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.records import empty_records
from megasim.contract.resources import PRECISIONS, gemm_body


def column(values, dtype) -> memoryview:
    """A writable memoryview on a fresh NumPy copy of `values`."""
    return memoryview(np.array(values, dtype=dtype))


def view(array: np.ndarray) -> memoryview:
    """A read-only memoryview on a contiguous copy of `array` (the graph's own columns, never written)."""
    return memoryview(np.ascontiguousarray(array)).toreadonly()


class BlockColumns:
    """Times (cycles), SM, dependency and job counts, and DRAM bytes of every block, indexed by block number,
    and what each block's jobs cost (`fp`, `moved`, `written`, `floor`, `added`, `scale`, `op`)."""

    __slots__ = ("order", "sm", "t_dispatch", "t_start", "t_ready", "t_end", "blocked", "pending", "dram_bytes",
                 "fp", "moved", "written", "floor", "added", "scale", "op")

    def __init__(self, order: np.ndarray, graph, gpu, work_scale: np.ndarray | None, gemm: str = "generic",
                 precision: str = "fp32"):
        n = len(order)
        self.order = view(order.astype(np.int64, copy=False))
        self.sm = column(np.full(n, -1), np.int32)
        self.t_dispatch, self.t_start, self.t_ready = (column(np.zeros(n), np.float64) for _ in range(3))
        self.t_end = column(np.full(n, -1.0), np.float64)
        self.blocked = bytearray(n)
        self.pending = bytearray(n)
        self.dram_bytes = column(np.zeros(n), np.float64)
        self._block_work(order, graph, gpu, work_scale, gemm, precision)

    def _block_work(self, order, graph, gpu, scale, gemm: str, precision: str = "fp32") -> None:
        """A block's FP32 work (the FLOPs its code issues over its op's efficiency), the bytes it moves through
        L2 (reads and writes), its latency floor (one DRAM latency after its work began), its added latency,
        all scaled by its work factor; the factor itself for its DRAM bytes, which are known only when it runs."""
        op = graph.op[order]
        model = gpu.model
        if model.law("gemm_constants") is not None:
            model = model.for_gemm_body(gemm_body(graph.layer, graph.partition, gemm))
        one = 1.0 if scale is None else scale
        read, written = (x[order] for x in graph.bytes_per_task())
        added = block_latency_cycles(graph, model)[order]
        flops = graph.flops if graph.issued_flops is None else graph.issued_flops
        eff = np.array([model.efficiency(o) for o in Op])
        if precision != "fp32":
            eff[Op.GEMM] /= gemm_precision_factor(model, graph.partition, gpu, precision)
            added = np.where(op == Op.GEMM, added * model.law("gemm_precision").latency_ratio, added)
        moved = (read + written) * one
        self.moved = view(moved)
        self.written = view(written)
        self.floor = view(np.full(len(order), float(gpu.dram_latency_cycles)))
        self.added = view(added * one)
        self.fp = view(flops[order] * one / eff[op])
        self.scale = view(np.ones(len(order)) if scale is None else scale)
        self.op = view(op)

    def __len__(self) -> int:
        return len(self.order)

    def records(self, graph, clock_mhz: float) -> np.ndarray:
        """The run as `TB_RECORD` rows, times in microseconds."""
        n = len(self.order)
        rec = empty_records(n)
        to_us = 1.0 / clock_mhz
        rec["block"] = np.arange(n)
        rec["task"] = np.asarray(self.order)
        rec["op"] = graph.op[rec["task"]]
        rec["sm"] = np.asarray(self.sm)
        for field, col in (("dispatch_us", self.t_dispatch), ("start_us", self.t_start),
                           ("ready_us", self.t_ready), ("end_us", self.t_end)):
            rec[field] = np.asarray(col) * to_us
        return rec


def predicted_precisions(model) -> tuple[str, ...]:
    """The GEMM precisions `model` can predict: every one where it has a `gemm_precision` law (which calibration
    fits from a GPU's 3xTF32 measurements), else FP32 alone."""
    return PRECISIONS if model.law("gemm_precision") is not None else ("fp32",)


def require_precision(model, precision: str) -> None:
    """Refuse a precision `model` cannot predict, in one line that says what would let it."""
    from megasim.contract.errors import MegasimError
    if precision not in PRECISIONS:
        raise MegasimError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    if precision not in predicted_precisions(model):
        raise MegasimError(f"precision {precision!r} needs a gemm_precision law (laws = [\"tensor_core_gemm\"]), which "
                           "calibration fits from a GPU's <gpu>_tensor_core.json; this model has none")


def gemm_precision_factor(model, partition, gpu, precision: str) -> float:
    """FP32 work of a GEMM task at `precision` (not fp32) per unit of its FP32 work (the `gemm_precision` law)."""
    require_precision(model, precision)
    return model.law("gemm_precision").fp_factor(partition, gpu.fp32_flops_per_cycle_per_sm)


def work_scale(n: int, cv: float, seed: int) -> np.ndarray | None:
    """Per-block work factors, lognormal with mean 1 and the given coefficient of variation; None if cv is 0."""
    if not cv:
        return None
    sigma = np.sqrt(np.log1p(cv * cv))
    return np.random.default_rng(seed).lognormal(-sigma * sigma / 2, sigma, n)


def block_latency_cycles(graph, model) -> np.ndarray:
    """float64[T] cycles: what each block's latency adds after its shared-resource jobs, the model's
    `block_fixed_cycles` of its type plus its serial steps (`megasim.contract.work.serial_steps`) times
    `step_cycles`. Fitted on the corpus kernels, this additive form predicted held-out kernels with roughly half
    the error of a floor overlapped with the jobs (docs/decisions.md, 'A block's latency adds to its throughput')."""
    steps = np.zeros(graph.num_tasks) if graph.serial_steps is None else np.asarray(graph.serial_steps, float)
    per_step = np.array([model.step_cycles.get(OP_NAMES[op], 0.0) for op in Op])[graph.op]
    fixed = np.array([model.block_fixed_cycles.get(OP_NAMES[op], 0.0) for op in Op])[graph.op]
    return fixed + steps * per_step


def run_scale(kernels, gpu, seed: int, op: np.ndarray) -> np.ndarray | None:
    """Each block's work factor in a run of `kernels` over tasks of types `op`: the lognormal spread
    (`Model.block_work_cv`) times the factors of a `work_factors` law (the first-wave stagger); None where
    both are off."""
    scale = work_scale(sum(len(k.tasks) for k in kernels), gpu.model.block_work_cv, seed)
    law = gpu.model.law("work_factors")
    factors = law.work_factors(kernels, gpu, op) if law is not None else None
    if factors is None:
        return scale
    return factors if scale is None else scale * factors
