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
                 gemm: str = "generic"):
        self._cp = require_cupy()
        self.graph = graph
        self.module = module(KernelConfig.of(graph, k_step=k_step, gemm=gemm))
        self.module.check(graph)
        self.ws = workspace or Workspace(graph)
        self.graphs: dict[tuple, object] = {}

    def launch(self, x, w, y, stream=None) -> None:
        cp, g, ws = self._cp, self.graph.geometry, self.ws
        stream = stream or cp.cuda.get_current_stream()
        nt = (self.graph.partition.threads,)
        fn = self.module.function
        fn("ms_filter_kernel")((g.n_f,), nt, (w, ws.U), stream=stream)
        fn("ms_input_kernel")((g.n_g * g.s_i,), nt, (x, ws.V), stream=stream)
        fn("ms_gemm_kernel")((g.n_g * g.s_g,), nt, (ws.U, ws.V, ws.M), stream=stream)
        fn("ms_output_kernel")((g.n_g * g.s_o,), nt, (ws.M, y), stream=stream)

    def capture(self, x, w, y):
        """A CUDA graph of the four launches on these buffers (cached per buffer set)."""
        key = (x.data.ptr, w.data.ptr, y.data.ptr)
        if key not in self.graphs:
            stream = self._cp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                self.launch(x, w, y, stream=stream)
                self.graphs[key] = stream.end_capture()
        return self.graphs[key]

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


__all__ = ["NonFusedConv"]
