"""What the session-13 study patches share: whether the run being simulated is the megakernel (a launch that polls
counters), and a hook on each block's latency (`megasim.contract.work.block_latency_cycles`) that sees it."""
import numpy as np
import megasim.engine.blocks as blocks
import megasim.engine.core as core
from megasim.contract.work import block_latency_cycles

_FUSED = {}


def track() -> None:
    """Note, before each run's blocks are built, whether its kernels poll counters (once, however often called)."""
    if _FUSED.get("tracked"):
        return
    run_scale = core.run_scale

    def flagged(kernels, gpu, seed, *rest):
        _FUSED["on"] = any(k.check_deps for k in kernels)
        return run_scale(kernels, gpu, seed, *rest)
    core.run_scale, _FUSED["tracked"] = flagged, True


def fused() -> bool:
    return bool(_FUSED.get("on"))


def steps_of(graph) -> np.ndarray:
    return np.zeros(graph.num_tasks) if graph.serial_steps is None else np.asarray(graph.serial_steps, float)


def on_latency(change) -> None:
    """Each block's (floor, added) cycles become `change(graph, gpu, floor, added)`, the run's kind tracked."""
    track()

    def latency(graph, gpu):
        return change(graph, gpu, *block_latency_cycles(graph, gpu))
    blocks.block_latency_cycles = latency
