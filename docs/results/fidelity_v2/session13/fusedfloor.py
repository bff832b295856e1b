"""Study patch: inside the megakernel an input-transform block takes at least its serial steps times the step of a
lone input block there (per Winograd variant, from the H200 sample's lone fused blocks: median 1,135 ns a step for
F(2), 2,049 for F(4), 2,877 for F(6)), overlapped with its jobs (less the step latency
the block adds after them); in its own kernel nothing changes."""
import numpy as np
from megasim.contract.problem import Op

from fusedrun import fused, on_latency, steps_of

LONE_STEP_NS = {2: 1135.0, 4: 2049.0, 6: 2877.0}


def install(scale: float = 1.0) -> None:
    def change(graph, gpu, floor, added):
        if not fused():
            return floor, added
        # the block's own step latency is added after its floor, so the floor holds the rest of a lone step
        step = max(LONE_STEP_NS[graph.variant.m] * scale * gpu.clock_mhz / 1000.0
                   - gpu.step_cycles.get("input_transform", 0.0), 0.0)
        rows = graph.op == Op.INPUT_TRANSFORM
        floor = floor.copy()
        floor[rows] = np.maximum(floor[rows], steps_of(graph)[rows] * step)
        return floor, added
    on_latency(change)
