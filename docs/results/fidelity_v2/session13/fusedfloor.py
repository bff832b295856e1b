"""Study patch: inside the megakernel an input-transform block takes at least its serial steps times the step of a
lone input block there (per Winograd variant, from the H200 sample's lone fused blocks: median 1,135 ns a step for
F(2), 2,049 for F(4), 2,877 for F(6)), overlapped with its jobs (less the step latency
the block adds after them); in its own kernel nothing changes."""
import numpy as np
import megasim.engine.blocks as blocks
import megasim.engine.core as core
from megasim.contract.problem import Op
from megasim.contract.work import block_latency_cycles

LONE_STEP_NS = {2: 1135.0, 4: 2049.0, 6: 2877.0}
_FUSED = {}


def install(scale: float = 1.0) -> None:
    run_scale = core.run_scale

    def flagged(kernels, gpu, seed):
        _FUSED["on"] = any(k.check_deps for k in kernels)
        return run_scale(kernels, gpu, seed)

    def latency(graph, gpu):
        floor, added = block_latency_cycles(graph, gpu)
        if not _FUSED.get("on"):
            return floor, added
        steps = np.zeros(graph.num_tasks) if graph.serial_steps is None else np.asarray(graph.serial_steps, float)
        # the block's own step latency is added after its floor, so the floor holds the rest of a lone step
        step = max(LONE_STEP_NS[graph.variant.m] * scale * gpu.clock_mhz / 1000.0
                   - gpu.step_cycles.get("input_transform", 0.0), 0.0)
        rows = graph.op == Op.INPUT_TRANSFORM
        floor = floor.copy()
        floor[rows] = np.maximum(floor[rows], steps[rows] * step)
        return floor, added
    blocks.block_latency_cycles, core.run_scale = latency, flagged
