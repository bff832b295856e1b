"""The non-fused baseline: the same four device functions as four kernels.

`NonFusedConv.launch()` issues filter, input, GEMM and output kernels in
order on one stream. `capture()` records the same four launches once into a
CUDA graph; `launch_graph()` replays it, so launch gaps do not flatter the
fused kernel in comparisons. Built from the same module as the megakernel,
it computes bit for bit the same output. `trace_records()` runs the four
kernels' trace build (kernels/trace_nonfused.cu, a module of its own, so the
timed build is untouched) and returns per-block records in the megakernel
trace's shape.
"""
from __future__ import annotations

import numpy as np

from megasim.gpu.backend import TRACE_ONLY, KernelConfig, module, require_cupy
from megasim.contract.problem import Op
from megasim.contract.resources import GEMM_K_STEP
from megasim.gpu.megakernel import Workspace, records_from_trace
from megasim.contract.graph import TaskGraph


class NonFusedConv:
    def __init__(self, graph: TaskGraph, workspace: Workspace | None = None, k_step: int = GEMM_K_STEP,
                 gemm: str = "generic", layout: str = "nhwc", precision: str = "fp32"):
        self._cp = require_cupy()
        self.graph = graph
        self.module = module(KernelConfig.of(graph, k_step=k_step, gemm=gemm, layout=layout, precision=precision))
        self.module.check(graph)
        self.ws = workspace or Workspace(graph)
        self.graphs: dict[tuple, object] = {}
        self._steps: dict[int, list] = {}

    def steps(self, stages: int = len(Op), filters_given: bool = False) -> list:
        """The launch sequence (`gpu.launch`): the first `stages` kernels in stage order; with
        `filters_given`, the last three, the GEMM reading U from the `U` slot, which `filter_steps` fills
        (an inference caller transforms a layer's filters once, not every call)."""
        from megasim.gpu.launch import U, Kernel, W, X, Y
        g, ws, fn = self.graph.geometry, self.ws, self.module.function
        calls = (("ms_filter_kernel", g.n_f, (W, ws.U)), ("ms_input_kernel", g.n_g * g.s_i, (X, ws.V)),
                 ("ms_gemm_kernel", g.n_g * g.s_g, (U if filters_given else ws.U, ws.V, ws.M)),
                 ("ms_output_kernel", g.n_g * g.s_o, (ws.M, Y)))
        return [Kernel(fn(name), blocks, self.graph.partition.threads, args, name)
                for name, blocks, args in calls[1 if filters_given else 0:stages]]

    def filter_steps(self) -> list:
        """The filter transform alone, W into the `U` slot: [a2][C][K] floats (`u_floats`)."""
        from megasim.gpu.launch import U, Kernel, W
        fn = self.module.function("ms_filter_kernel")
        return [Kernel(fn, self.graph.geometry.n_f, self.graph.partition.threads, (W, U), "ms_filter_kernel")]

    @property
    def u_floats(self) -> int:
        return int(self.ws.U.size)

    def launch(self, x, w, y, stream=None, stages: int = len(Op)) -> None:
        """The first `stages` kernels in stage order (all four unless a prefix is asked for)."""
        from megasim.gpu.launch import run_cupy
        if stages not in self._steps:
            self._steps[stages] = self.steps(stages)
        run_cupy(self._steps[stages], x, w, y, stream or self._cp.cuda.get_current_stream())

    def capture(self, x, w, y, stages: int = len(Op)):
        """A CUDA graph of the first `stages` launches on these buffers (cached per buffer set and prefix)."""
        key = (x.data.ptr, w.data.ptr, y.data.ptr, stages)
        if key not in self.graphs:
            stream = self._cp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                self.launch(x, w, y, stream=stream, stages=stages)
                self.graphs[key] = stream.end_capture()
        return self.graphs[key]

    def stage_times_graphed(self, xs, ws, ys, reps: int) -> dict:
        """Each kernel's time inside the pipeline with no host in the way: graphs of the first 1, 2, 3 and 4
        launches, each timed alone (`time_launches`, rotating over the input sets); kernel j is prefix j
        less prefix j-1. Events between eager launches (`calibrate.gpu_runs`) also time the host whenever
        Python issues a launch slower than the GPU runs the previous kernel, which small shapes do.
        The first kernel's share carries the graph's launch; `floor_us`, a graph of one empty kernel,
        says how much that is."""
        from megasim.gpu.timing import time_launches
        cp, n = self._cp, len(xs)
        prefix = []
        for k in range(1, len(Op) + 1):
            graphs = [self.capture(xs[i], ws[i], ys[i], stages=k) for i in range(n)]
            prefix.append(time_launches(cp, lambda i: graphs[i].launch(), n, reps)["median_us"])
        kernels = [prefix[0]] + [b - a for a, b in zip(prefix, prefix[1:])]
        return {"prefix_us": prefix, "kernels_us": kernels, "floor_us": _empty_graph_us(cp, reps)}

    def launch_graph(self, x, w, y, stream=None) -> None:
        stream = stream or self._cp.cuda.get_current_stream()
        self.capture(x, w, y).launch(stream=stream)

    def run(self, x, w, y) -> None:
        self.launch(x, w, y)
        self._cp.cuda.get_current_stream().synchronize()

    def trace_records(self, x, w, y) -> np.ndarray:
        """One run of the four kernels' trace build, in stage order: TB_RECORDs in microseconds from the
        first block's start, block = task id (the stages' tasks are numbered in launch order)."""
        cp, graph, ws = self._cp, self.graph, self.ws
        g, fn = graph.geometry, module(self.module.config, TRACE_ONLY).function
        buf = cp.zeros((graph.num_tasks, 4), dtype=cp.uint64)
        first = [np.int32(g.first_task(op)) for op in Op]
        nt = (graph.partition.threads,)
        fn("ms_filter_kernel_trace")((g.n_f,), nt, (w, ws.U, buf, first[0]))
        fn("ms_input_kernel_trace")((g.n_g * g.s_i,), nt, (x, ws.V, buf, first[1]))
        fn("ms_gemm_kernel_trace")((g.n_g * g.s_g,), nt, (ws.U, ws.V, ws.M, buf, first[2]))
        fn("ms_output_kernel_trace")((g.n_g * g.s_o,), nt, (ws.M, y, buf, first[3]))
        cp.cuda.get_current_stream().synchronize()
        return records_from_trace(graph, buf.get())


def _empty_graph_us(cp, reps: int) -> float:
    """Median time of a CUDA graph holding one one-thread kernel that does nothing useful."""
    from megasim.gpu.timing import time_launches
    nop = cp.ElementwiseKernel("", "float32 y", "y = 0.0f", "ms_graph_floor")
    buf = cp.zeros(1, dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        nop(buf)
        graph = stream.end_capture()
    return time_launches(cp, lambda i: graph.launch(), 1, reps)["median_us"]


__all__ = ["NonFusedConv"]
