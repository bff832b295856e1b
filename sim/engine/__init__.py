"""SimPy model of the GPU. `fused` and `nonfused` describe the launches; `run_kernels` executes them."""
from megasim.engine import compiled

COMPILED = compiled.load()  # first: compiled or pure-Python hot modules

from megasim.engine.core import Kernel, RawRun, run_kernels
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.resources import Flavor, megakernel_resources, stage_resources
from megasim.contract.scheduling import check_mode, ready_queue


def fused_kernels(graph, mapping, mode: str = "static", gemm: str = "generic"):
    """The megakernel: every task in mapping order, one block shape (the max over stages).

    Its dependency counters are reset by a copy launched just before it, which the measured time holds.
    `mode` is the scheduling mode (`megasim.contract.scheduling`), `gemm` the GEMM task's body.
    """
    check_mode(mode)
    ready = ready_queue(graph, mapping.order) if mode == "ready_queue" else None
    resources = megakernel_resources(graph.partition, flavor=Flavor.of_graph(graph, gemm))
    return [Kernel(mapping.order, resources, True, "megakernel", preceding_launches=1,
                   persistent=mode == "persistent", ready=ready, gemm=gemm)]


def nonfused_kernels(graph, gemm: str = "generic"):
    """Four kernels in stage order, each with its own footprint; the launch gap is their barrier."""
    flavor = Flavor.of_graph(graph, gemm)
    return [Kernel(graph.tasks_of(op), stage_resources(graph.partition, op, flavor=flavor), False, OP_NAMES[op],
                   gemm=gemm) for op in Op]


__all__ = ["COMPILED", "Kernel", "RawRun", "run_kernels", "fused_kernels", "nonfused_kernels"]
