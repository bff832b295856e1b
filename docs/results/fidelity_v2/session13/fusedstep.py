"""Study patch: inside the megakernel an input-transform block's serial steps each take DELTA more cycles than in
its own kernel (added latency, additive like the rest of its latency). Lone input blocks of the H200 sample take a
median 380 ns (about 750 cycles) a step more in the megakernel; on the device ResNet-1's head blocks took 36-38 us
in the megakernel against 27 us in a kernel of their own (session 13, item 2)."""
import numpy as np
import megasim.engine.blocks as blocks
import megasim.engine.core as core
from megasim.contract.problem import Op
from megasim.contract.work import block_latency_cycles

_FUSED = {}


def install(delta: float) -> None:
    run_scale = core.run_scale

    def flagged(kernels, gpu, seed):
        _FUSED["on"] = any(k.check_deps for k in kernels)
        return run_scale(kernels, gpu, seed)

    def latency(graph, gpu):
        floor, added = block_latency_cycles(graph, gpu)
        if not _FUSED.get("on"):
            return floor, added
        steps = np.zeros(graph.num_tasks) if graph.serial_steps is None else np.asarray(graph.serial_steps, float)
        added = added + np.where(graph.op == Op.INPUT_TRANSFORM, steps * delta, 0.0)
        return floor, added
    blocks.block_latency_cycles, core.run_scale = latency, flagged
