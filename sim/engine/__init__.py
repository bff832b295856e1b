"""SimPy model of the GPU. `fused` and `nonfused` describe the launches; `run_kernels` executes them."""
from megasim.engine import compiled

COMPILED = compiled.load()  # first: compiled or pure-Python hot modules

from megasim.engine.core import Kernel, RawRun, run_kernels
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.resources import Flavor, megakernel_resources, stage_resources
from megasim.contract.scheduling import check_mode, ready_queue


def fused_kernels(graph, mapping, mode: str = "static", gemm: str = "generic", self_reset: bool = False,
                  precision: str = "fp32"):
    """The megakernel: every task in mapping order, one block shape (the max over stages).

    Its dependency counters are reset by a copy launched just before it, which the measured time holds,
    unless the build resets them itself (`self_reset`: its last block out does, within the kernel's time).
    `mode` is the scheduling mode (`megasim.contract.scheduling`), `gemm` the GEMM task's body.
    """
    check_mode(mode)
    ready = ready_queue(graph, mapping.order) if mode == "ready_queue" else None
    resources = megakernel_resources(graph.partition, flavor=Flavor.of_graph(graph, gemm, precision))
    return [Kernel(mapping.order, resources, True, "megakernel", preceding_launches=0 if self_reset else 1,
                   persistent=mode == "persistent", ready=ready, gemm=gemm, precision=precision)]


def nonfused_kernels(graph, gemm: str = "generic", transform_filters: bool = True, precision: str = "fp32"):
    """Four kernels in stage order, each with its own footprint; the launch gap is their barrier. Without
    `transform_filters`, the last three: the caller keeps U from an earlier call (inference)."""
    flavor = Flavor.of_graph(graph, gemm, precision)
    ops = list(Op) if transform_filters else [op for op in Op if op != Op.FILTER_TRANSFORM]
    return [Kernel(graph.tasks_of(op), stage_resources(graph.partition, op, flavor=flavor), False, OP_NAMES[op],
                   gemm=gemm, precision=precision) for op in ops]


__all__ = ["COMPILED", "Kernel", "RawRun", "run_kernels", "fused_kernels", "nonfused_kernels"]
