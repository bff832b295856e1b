"""The fused Winograd megakernel, driven by a TaskGraph and a Mapping.

`FusedConv` holds one compiled build (it refuses graphs of another layer,
variant or partition), the encoded task map of one mapping
(`sim.encoding.encode`), the control words (ticket, error record, counters)
and their initial values on the device. `launch()` resets the control words
with one device-to-device copy and launches once; the copy is part of every
fused launch and of every fused timing. A self-resetting build
(`self_reset=True`, what megasim.torch runs) launches alone: its last block
out restores the words, which saves a host-bound caller one launch (about
5 us of host time on an H200 host). `layout="nchw"` builds read x and write y
as NCHW. `check()` reads the error record and
raises MegasimError when a block timed out. `trace_records()` turns the trace
build's timestamps into `sim.trace.TB_RECORD`s.
"""
from __future__ import annotations

import numpy as np

from megasim.gpu.backend import KernelConfig, module, require_cupy
from megasim.contract.resources import GEMM_K_STEP
from megasim.contract.control import COUNTERS_AT, STRIDE, Ctl
from megasim.contract.encoding import encode
from megasim.contract.errors import MegasimError
from megasim.contract.graph import TaskGraph
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.records import empty_records
from megasim.contract.scheduling import RESIDENT_MODES, RootWindow, ran_dry, ready_queue


class Workspace:
    """The intermediate buffers U, V, M of one graph."""

    def __init__(self, graph: TaskGraph):
        cp = require_cupy()
        shapes = graph.ranges.shapes()
        self.U, self.V, self.M = (cp.empty(shapes[name], dtype=cp.float32) for name in ("U", "V", "M"))


def device_blocks_per_sm(cp, kernel, threads: int) -> int:
    """Blocks of `kernel` one SM holds at once, by the driver's occupancy query of the compiled build."""
    query = getattr(cp.cuda.driver, "occupancyMaxActiveBlocksPerMultiprocessor", None)
    if query is None:
        raise MegasimError("this CuPy has no occupancy query; the persistent mode needs one to size its grid")
    function = getattr(kernel, "kernel", kernel)  # a RawKernel wraps the driver's function
    return int(query(function.ptr, threads, 0))


def resident_capacity(cp, kernel, threads: int) -> int:
    """Blocks of `kernel` that fit on the whole GPU at once."""
    return device_blocks_per_sm(cp, kernel, threads) * int(cp.cuda.Device().attributes["MultiProcessorCount"])


def _static_occupancy(cp, graph: TaskGraph, build: dict) -> int:
    """Blocks per SM of the static build: the persistent loop must not cost one (its launch bounds)."""
    static = module(KernelConfig.of(graph, **{**build, "trace": False})).function("ms_megakernel")
    return device_blocks_per_sm(cp, static, graph.partition.threads)


def fused_module(graph: TaskGraph, mode: str = "static", *, ticket: bool = True, trace: bool = False,
                 spin_limit_ns: int = 2_000_000_000, k_step: int = GEMM_K_STEP, gemm: str = "generic",
                 layout: str = "nhwc", self_reset: bool = False, precision: str = "fp32"):
    """The compiled build `FusedConv` runs for `graph` in `mode` (a resident mode compiles the static build
    first, for its occupancy). Precompiling in a worker process with the same arguments fills CuPy's disk
    cache with exactly what a later `FusedConv` loads."""
    cp = require_cupy()
    build = dict(ticket=ticket, trace=trace, spin_limit_ns=spin_limit_ns, k_step=k_step, gemm=gemm, layout=layout,
                 self_reset=self_reset, precision=precision)
    if mode in RESIDENT_MODES:
        build["min_blocks"] = _static_occupancy(cp, graph, build)
    compiled = module(KernelConfig.of(graph, mode=mode, **build))
    compiled.check(graph)
    return compiled


def records_from_trace(graph: TaskGraph, raw: np.ndarray) -> np.ndarray:
    """TB_RECORDs from a trace build's words (a row per block: %smid << 32 | task, start, ready, end in
    %globaltimer ns), in microseconds from the earliest block start."""
    rec = empty_records(len(raw))
    task = (raw[:, 0] & 0xFFFFFFFF).astype(np.int64)
    t0 = raw[:, 1].min()
    rec["block"] = np.arange(len(raw))
    rec["task"] = task
    rec["op"] = graph.op[task]
    rec["sm"] = (raw[:, 0] >> 32).astype(np.int32)
    for field, col in (("start_us", 1), ("ready_us", 2), ("end_us", 3)):
        rec[field] = (raw[:, col] - t0).astype(np.float64) / 1e3
    rec["dispatch_us"] = rec["start_us"]
    return rec


class FusedConv:
    def __init__(self, graph: TaskGraph, mapping, *, ticket: bool = True, trace: bool = False,
                 spin_limit_ns: int = 2_000_000_000, workspace: Workspace | None = None, k_step: int = GEMM_K_STEP,
                 mode: str = "static", blocks: int | None = None, gemm: str = "generic", layout: str = "nhwc",
                 self_reset: bool = False, precision: str = "fp32"):
        cp = require_cupy()
        self.graph = graph
        self.self_reset = self_reset
        self.module = fused_module(graph, mode, ticket=ticket, trace=trace, spin_limit_ns=spin_limit_ns,
                                   k_step=k_step, gemm=gemm, layout=layout, self_reset=self_reset,
                                   precision=precision)
        self.kernel = self.module.function("ms_megakernel")
        self.grid = self._grid(cp, mode, blocks)
        self.order = np.asarray(getattr(mapping, "order", mapping), dtype=np.int64)
        self.task_map = cp.asarray(encode(graph, self.order))
        init = np.zeros(COUNTERS_AT + STRIDE * len(graph.counter_init), dtype=np.int32)
        init[COUNTERS_AT::STRIDE] = graph.counter_init
        rq = np.zeros(1, dtype=np.int32)
        if mode == "ready_queue":
            init, rq = self._ready_queue_words(init)
        if self_reset:  # the initial words ride after the live ones, where the last block out reads them
            init[Ctl.INIT_AT], init[Ctl.NUM_COUNTERS] = len(init), len(graph.counter_init)
        self.ctl_init = cp.asarray(init)
        self.rq = cp.asarray(rq)
        self.ctl = cp.asarray(np.concatenate([init, init])) if self_reset else cp.empty_like(self.ctl_init)
        self.trace = cp.zeros((graph.num_tasks, 4), dtype=cp.uint64) if trace else cp.zeros(4, dtype=cp.uint64)
        self.ws = workspace or Workspace(graph)
        self._cp = cp
        self._steps = None

    def _ready_queue_words(self, init: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Control words with the FIFO (the first grid-size roots, then -1) and the pending counts after
        the counters; and the constant lists: per-counter offsets, the waiter lists, the roots."""
        plan = ready_queue(self.graph, self.order)
        tasks, first = self.graph.num_tasks, RootWindow(plan.roots, self.grid).first()
        fifo = np.full(tasks, -1, dtype=np.int32)
        fifo[:len(first)] = first
        init[Ctl.PUSHED] = init[Ctl.ROOTS_QUEUED] = len(first)
        init[Ctl.FIFO], init[Ctl.PENDING] = len(init), len(init) + tasks
        init[Ctl.WAITERS] = len(plan.waiter_offsets)
        init[Ctl.ROOTS], init[Ctl.NUM_ROOTS] = len(plan.waiter_offsets) + len(plan.waiters), len(plan.roots)
        return (np.concatenate([init, fifo, plan.pending]),
                np.concatenate([plan.waiter_offsets, plan.waiters, plan.roots]))

    def _grid(self, cp, mode: str, blocks: int | None) -> int:
        """One block per task, or (persistent) what is co-resident; a larger persistent grid is refused."""
        tasks = self.graph.num_tasks
        if mode == "static":
            return tasks
        capacity = resident_capacity(cp, self.kernel, self.graph.partition.threads)
        if blocks is not None and blocks > capacity:
            raise MegasimError(f"{mode} grid of {blocks} blocks exceeds the {capacity} that fit on this GPU at "
                               f"once; blocks that cannot be resident could wait forever on each other")
        return min(tasks, blocks or capacity)

    def steps(self) -> list:
        """The launch sequence (`gpu.launch`): reset the control words (unless the build resets them itself),
        then the megakernel."""
        from megasim.gpu.launch import Copy, Kernel, W, X, Y
        ws = self.ws
        kernel = Kernel(self.kernel, self.grid, self.graph.partition.threads,
                        (X, W, ws.U, ws.V, ws.M, Y, self.task_map, self.ctl, self.trace, self.rq), "ms_megakernel")
        if self.self_reset:
            return [kernel]
        return [Copy(self.ctl.data.ptr, self.ctl_init.data.ptr, self.ctl_init.nbytes), kernel]

    def launch(self, x, w, y, stream=None) -> None:
        """Reset the control words and launch once (asynchronous)."""
        from megasim.gpu.launch import run_cupy
        if self._steps is None:
            self._steps = self.steps()
        run_cupy(self._steps, x, w, y, stream or self._cp.cuda.get_current_stream())

    def check(self) -> None:
        """Raise if any block timed out waiting (a deadlocked or illegal mapping)."""
        ctl = self.ctl[:Ctl.ERROR_VALUE + 1].get()
        if ctl[Ctl.ERROR]:
            if self.self_reset:  # a failed launch leaves its words for this read; the next one needs them fresh
                self.ctl[:len(self.ctl_init)] = self.ctl_init
            block, task, counter, value = (int(v) for v in ctl[Ctl.ERROR_BLOCK:Ctl.ERROR_VALUE + 1])
            g = self.graph
            if task < 0:
                raise MegasimError(ran_dry(f"FIFO slot {counter} stayed empty for "
                                           f"{self.module.config.spin_limit_ns / 1e9:g} s with {value} of "
                                           f"{g.num_tasks} tasks ever queued"))
            raise MegasimError(
                f"mapping deadlock or timeout at logical block {block}, task {task} "
                f"({OP_NAMES[Op(int(g.op[task]))]} of group {int(g.group[task])}): counter {counter} still "
                f"at {value} after {self.module.config.spin_limit_ns / 1e9:g} s")

    def run(self, x, w, y) -> None:
        self.launch(x, w, y)
        self._cp.cuda.get_current_stream().synchronize()
        self.check()

    def trace_records(self) -> np.ndarray:
        """TB_RECORDs of the last launch: microseconds from the earliest block start."""
        if not self.module.config.trace:
            raise MegasimError("trace_records needs a build with trace=True")
        return records_from_trace(self.graph, self.trace.get())


__all__ = ["FusedConv", "Workspace", "fused_module", "records_from_trace"]
