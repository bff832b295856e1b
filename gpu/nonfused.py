"""The non-fused baseline: the same four device functions as four kernels.

`NonFusedConv.launch()` issues filter, input, GEMM and output kernels in
order on one stream. `capture()` records the same four launches once into a
CUDA graph; `launch_graph()` replays it, so launch gaps do not flatter the
fused kernel in comparisons. Built from the same module as the megakernel,
it computes bit for bit the same output.
"""
from __future__ import annotations

from megasim.gpu.backend import KernelConfig, module, require_cupy
from megasim.contract.resources import GEMM_K_STEP
from megasim.gpu.megakernel import Workspace
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


__all__ = ["NonFusedConv"]
