"""Always the lowest-numbered SM with a free slot: fills SM 0 first, the
pessimistic packing that leaves high SMs idle on small grids."""
import heapq

from megasim.engine.dispatch.base import policy


@policy("first_free")
class FirstFree:
    def __init__(self, gpu, slots_per_sm, opts):
        self.heap = [sm for sm in range(gpu.sm_count) for _ in range(slots_per_sm)]
        heapq.heapify(self.heap)

    def take(self, block):
        return heapq.heappop(self.heap) if self.heap else -1

    def release(self, sm):
        heapq.heappush(self.heap, sm)
