"""First wave round robin over SM ids, one slot per SM per round; then the
first slot to free takes the next block."""
from megasim.engine.dispatch.base import FreeSlotFifo, policy


@policy("in_order_round_robin")
class InOrderRoundRobin(FreeSlotFifo):
    def __init__(self, gpu, slots_per_sm, opts):
        super().__init__([sm for _ in range(slots_per_sm) for sm in range(gpu.sm_count)])
