"""Session 16 study patch: an L2 miss never fetches more than the region holds.

An input task is charged per tile row of its group, so a band's region is read as its rows plus the halo rows the
neighbouring tile rows share: up to (m + 2) / m of the region, as one access. That is right for the traffic into
L2, but the L2 model also charges all of it as a miss, so DRAM reads x's interior bands 1.5 times (F(4)). Nsight
Compute counts about 1.05 times x on ResNet-2 (device/ncu_transforms.md). `install()` caps each read's miss at the
region's size less what it holds; region sizes are exact for INPUT (band rows x chunk columns x channel block) and
the largest single access for the other buffers.
"""
import numpy as np

import megasim.engine.core as core
import megasim.engine.l2 as l2
from megasim.contract.regions import INPUT_CHUNK_TILES, Buffer


def region_sizes(graph) -> np.ndarray:
    """Bytes each region holds."""
    size = np.zeros(graph.regions.num_regions, np.int64)
    np.maximum.at(size, graph.read_region, graph.read_bytes)
    np.maximum.at(size, graph.write_region, graph.write_bytes)
    layer, m, r = graph.layer, graph.variant.m, graph.ranges
    th, tw = graph.variant.tiles(layer)
    chunks = -(-tw // INPUT_CHUNK_TILES)
    width = INPUT_CHUNK_TILES * m
    img, band, q, cb = np.meshgrid(np.arange(layer.n), np.arange(th), np.arange(chunks), np.arange(r.input_c.count),
                                   indexing="ij")
    rows = np.clip(np.minimum(band * m + m, layer.h) - band * m, 0, None)
    cols = np.clip(np.minimum(q * width + width, layer.w) - q * width, 0, None)
    base = graph.regions.base[Buffer.INPUT]
    key = ((img * th + band) * chunks + q) * r.input_c.count + cb
    size[base + key.ravel()] = (rows * cols * r.input_c.sizes()[cb] * 4).ravel()
    return size


class CappedL2(l2.L2Model):
    __slots__ = ("size",)

    def __init__(self, graph, capacity_bytes):
        l2.L2Model.__init__(self, graph, capacity_bytes)
        self.size = region_sizes(graph)

    def read(self, task):
        last, filled, cap, size = self.last, self.filled, self.capacity, self.size
        rreg, rbytes, kind, miss_bytes = self.rreg, self.rbytes, self.kind, self.miss_bytes
        clock, miss = self.clock, 0
        for i in range(self.rptr[task], self.rptr[task + 1]):
            r = rreg[i]
            b = min(rbytes[i], size[r])
            have = filled[r] if clock - last[r] <= cap else 0
            if b > have:
                miss_bytes[kind[r]] += b - have
                miss += b - have
                clock += b - have
                filled[r] = b
            last[r] = clock
        self.clock = clock
        return miss


def install() -> None:
    core.L2Model = CappedL2
