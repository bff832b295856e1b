"""The NumPy emulator and the CUDA kernels behind the interpreter protocol (`megasim.contract.interpreter`).

The emulator has no clock: its records list the blocks in the order it ran them, with NaN times, and
its output is y. The CUDA interpreter launches once into a fresh NaN-poisoned y (the correctness run),
then, with `reps`, times that many launches rotating over the input sets (`gpu.timing`): the median is
the run's time and `native` holds the statistics. Its kernel build options (ticket, trace, spin limit,
GEMM step, a shared workspace, CUDA-graph replay of the non-fused kernels) go to the constructor.
Both import without CuPy; the CUDA one needs it to run.
"""
from __future__ import annotations

import math

import numpy as np

from megasim.contract.graph import TaskGraph
from megasim.contract.interpreter import Execution, RunConfig, block_order, require_whole, untimed_records
from megasim.contract.mapping import Mapping
from megasim.contract.resources import GEMM_K_STEP
from megasim.contract.scheduling import serial_queue_order
from megasim.gpu.backend import require_cupy
from megasim.gpu.emulator import emulate
from megasim.gpu.megakernel import FusedConv, Workspace
from megasim.gpu.nonfused import NonFusedConv
from megasim.gpu.timing import rotation_inputs, time_launches


class EmulatorInterpreter:
    """Computes y block by block in logical order, raising where a block would wait forever; in the
    ready-queue mode, in the order one block draining the queue would take them."""

    name = "emulator"

    def __init__(self, dtype=np.float32):
        self.dtype = dtype

    def run(self, graph: TaskGraph, mapping: Mapping | None, config: RunConfig = RunConfig()) -> Execution:
        require_whole(self.name, config.launch)
        order = block_order(graph, mapping, config.launch)
        if config.inputs:
            x, w = config.inputs[0][:2]
        else:
            rng = np.random.default_rng(config.seed)
            lay = graph.layer
            x = rng.standard_normal((lay.n, lay.h, lay.w, lay.c))
            w = rng.standard_normal((lay.k, 3, 3, lay.c))
        served = serial_queue_order(graph, order) if config.mode == "ready_queue" else order
        y = emulate(graph, Mapping(served), x, w, self.dtype)
        return Execution(interpreter=self.name, launch=config.launch, records=untimed_records(graph, order),
                         output=y)


class CudaInterpreter:
    """The megakernel (launch "fused") or the four non-fused kernels on the device."""

    name = "cuda"

    def __init__(self, *, ticket: bool = True, trace: bool = False, spin_limit_ns: int = 2_000_000_000,
                 k_step: int = GEMM_K_STEP, workspace: Workspace | None = None, graph_capture: bool = False,
                 gemm: str = "generic", precision: str = "fp32"):
        self.fused_options = dict(ticket=ticket, trace=trace, spin_limit_ns=spin_limit_ns, k_step=k_step, gemm=gemm,
                                  precision=precision)
        self.k_step, self.gemm, self.precision = k_step, gemm, precision
        self.workspace = workspace
        self.graph_capture = graph_capture

    def run(self, graph: TaskGraph, mapping: Mapping | None, config: RunConfig = RunConfig()) -> Execution:
        require_whole(self.name, config.launch)
        cp = require_cupy()
        xs, wts, ys = (zip(*config.inputs) if config.inputs else rotation_inputs(cp, graph.layer, config.seed))
        xs, wts, ys = list(xs), list(wts), list(ys)
        if config.launch == "fused":
            conv = FusedConv(graph, mapping, workspace=self.workspace, mode=config.mode, **self.fused_options)
        else:
            conv = NonFusedConv(graph, workspace=self.workspace, k_step=self.k_step, gemm=self.gemm,
                                precision=self.precision)
        y = cp.full_like(ys[0], cp.nan)
        conv.run(xs[0], wts[0], y)
        stats = self._time(cp, conv, config.reps, xs, wts, ys) if config.reps else None
        traced = config.launch == "fused" and self.fused_options["trace"]
        records = conv.trace_records() if traced else untimed_records(graph, block_order(graph, mapping, config.launch))
        return Execution(interpreter=self.name, launch=config.launch, records=records,
                         time_us=stats["median_us"] if stats else math.nan, output=y, native=stats)

    def _time(self, cp, conv, reps: int, xs, wts, ys) -> dict:
        """`reps` launches over the rotated sets; a fused kernel's error record is read after them."""
        launch = conv.launch
        if isinstance(conv, NonFusedConv) and self.graph_capture:
            for i in range(len(xs)):
                conv.capture(xs[i], wts[i], ys[i])
            launch = conv.launch_graph
        stats = time_launches(cp, lambda i: launch(xs[i], wts[i], ys[i]), len(xs), reps)
        if isinstance(conv, FusedConv):
            conv.check()
        return stats
