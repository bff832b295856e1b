"""Per-block state of one run as NumPy columns.

A VGG-scale run has tens of thousands of blocks per launch, and a study may
ask for a million. Python lists of floats cost 32 bytes an entry (a pointer
and a float object); a float64 column costs 8. The engine reads and writes
the columns through `memoryview`s, which hand out plain Python ints and
floats: NumPy scalars would be slower in the arithmetic that follows than
the lists were. The columns become the `TB_RECORD` array at the end without
a copy through Python.
"""
from __future__ import annotations

import numpy as np

from megasim.contract.records import empty_records


def column(values, dtype) -> memoryview:
    """A writable memoryview on a fresh NumPy copy of `values`."""
    return memoryview(np.array(values, dtype=dtype))


def view(array: np.ndarray) -> memoryview:
    """A read-only memoryview on a contiguous copy of `array` (the graph's own columns, never written)."""
    return memoryview(np.ascontiguousarray(array)).toreadonly()


class BlockColumns:
    """Times (cycles), SM, dependency and job counts, and DRAM bytes of every block, indexed by block number."""

    __slots__ = ("order", "sm", "t_dispatch", "t_start", "t_ready", "t_end", "blocked", "pending", "floor",
                 "dram_bytes", "work_scale")

    def __init__(self, order: np.ndarray, work_scale: np.ndarray | None):
        n = len(order)
        self.order = view(order.astype(np.int64, copy=False))
        self.sm = column(np.full(n, -1), np.int32)
        self.t_dispatch, self.t_start, self.t_ready = (column(np.zeros(n), np.float64) for _ in range(3))
        self.t_end = column(np.full(n, -1.0), np.float64)
        self.blocked = column(np.zeros(n), np.int8)
        self.pending = column(np.zeros(n), np.int8)
        self.floor = column(np.zeros(n), np.float64)
        self.dram_bytes = column(np.zeros(n), np.float64)
        self.work_scale = None if work_scale is None else view(work_scale)

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


def work_scale(n: int, cv: float, seed: int) -> np.ndarray | None:
    """Per-block work factors, lognormal with mean 1 and the given coefficient of variation; None if cv is 0."""
    if not cv:
        return None
    sigma = np.sqrt(np.log1p(cv * cv))
    return np.random.default_rng(seed).lognormal(-sigma * sigma / 2, sigma, n)
