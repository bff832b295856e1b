"""Study patch: inside the megakernel an input-transform block's serial steps each take DELTA more cycles than in
its own kernel (added latency, additive like the rest of its latency). Lone input blocks of the H200 sample take a
median 380 ns (about 750 cycles) a step more in the megakernel; on the device ResNet-1's head blocks took 36-38 us
in the megakernel against 27 us in a kernel of their own (session 13, item 2)."""
import numpy as np
from megasim.contract.problem import Op

from fusedrun import fused, on_latency, steps_of


def install(delta: float) -> None:
    def change(graph, gpu, floor, added):
        if not fused():
            return floor, added
        return floor, added + np.where(graph.op == Op.INPUT_TRANSFORM, steps_of(graph) * delta, 0.0)
    on_latency(change)
