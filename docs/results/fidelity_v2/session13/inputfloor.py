"""Study patch: an input transform's serial steps are a floor under its jobs, not added after them
(`serial_latency = "floor"` for that one task type); every other type keeps the spec's rule. A lone input block
is latency-bound (one per SM: about 2 us a step, session 13) while four per SM are bound by the chip's DRAM,
which "additive" cannot hold at once. FUSED multiplies the floor inside the megakernel;
STEP, when given, is the step's latency (cycles) whatever the spec says, so stage 2 fits the rest around it."""
import numpy as np
import megasim.engine.blocks as blocks
import megasim.engine.core as core
from megasim.contract.problem import Op
from megasim.contract.work import block_latency_cycles


_FUSED = {}


def install(fused: float = 1.0, step: float | None = None) -> None:
    run_scale = core.run_scale

    def flagged(kernels, gpu, seed):
        _FUSED["on"] = any(k.check_deps for k in kernels)
        return run_scale(kernels, gpu, seed)

    def latency(graph, gpu):
        floor, added = block_latency_cycles(graph, gpu)
        if gpu.serial_latency != "additive":
            return floor, added
        steps = np.zeros(graph.num_tasks) if graph.serial_steps is None else np.asarray(graph.serial_steps, float)
        rows = graph.op == Op.INPUT_TRANSFORM
        path = steps * (step if step is not None else gpu.step_cycles.get("input_transform", 0.0))
        floor, added = floor.copy(), added.copy()
        floor[rows] = path[rows] * (fused if _FUSED.get("on") else 1.0)
        added[rows] -= steps[rows] * gpu.step_cycles.get("input_transform", 0.0)
        return floor, added
    blocks.block_latency_cycles, core.run_scale = latency, flagged
