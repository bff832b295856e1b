"""Study patch: an input transform's serial steps are a floor under its jobs, not added after them
(`serial_latency = "floor"` for that one task type); every other type keeps the spec's rule. A lone input block
is latency-bound (one per SM: about 2 us a step, session 13) while four per SM are bound by the chip's DRAM,
which "additive" cannot hold at once. FUSED multiplies the floor inside the megakernel;
STEP, when given, is the step's latency (cycles) whatever the spec says, so stage 2 fits the rest around it."""
from megasim.contract.problem import Op

from fusedrun import fused as in_megakernel, on_latency, steps_of


def install(fused: float = 1.0, step: float | None = None) -> None:
    def change(graph, gpu, floor, added):
        if gpu.serial_latency != "additive":
            return floor, added
        steps = steps_of(graph)
        rows = graph.op == Op.INPUT_TRANSFORM
        path = steps * (step if step is not None else gpu.step_cycles.get("input_transform", 0.0))
        floor, added = floor.copy(), added.copy()
        floor[rows] = path[rows] * (fused if in_megakernel() else 1.0)
        added[rows] -= steps[rows] * gpu.step_cycles.get("input_transform", 0.0)
        return floor, added
    on_latency(change)
