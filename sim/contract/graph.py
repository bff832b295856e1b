"""The task graph: every thread-block task of one Winograd convolution, as columns.

Tasks are numbered type-major, in the order the four non-fused kernels would
launch them: filter transforms, then input transforms group by group, then
GEMMs, then output transforms. So the identity mapping is the sequential
schedule of paper Fig. 3a.

Dependencies are counted events (paper Listing 2): one counter for the whole
filter transform, and per task group one input->GEMM and one GEMM->output
counter, each initialised to its number of parents. A task signals at most
one counter and waits on at most two (a GEMM needs its group's inputs *and*
the filters). Edge lists would explode; counters are what the GPU holds.

What each task reads and writes (`megasim.contract.ranges`) is recorded per
named buffer region (`megasim.contract.regions`), so the L2 model sees the
paper's three kinds of reuse.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from megasim.contract.problem import FLOAT_BYTES, Layer, Op, Partition, WinogradVariant
from megasim.contract.ranges import DataRanges
from megasim.contract.regions import RegionLayout, build_accesses
from megasim.contract.size import check_size
from megasim.contract.transforms import transform_flops
from megasim.contract.work import issued_flops, serial_steps

NO_COUNTER = -1
FILTER_COUNTER = 0


@dataclass(frozen=True)
class Geometry:
    """Task counts of paper section 5.1 plus the sub-block grid inside a group."""

    tiles_h: int
    tiles_w: int
    num_tiles: int
    n_g: int
    s_i: int
    s_g: int
    s_o: int
    n_f: int
    n_eb: int
    n_kb: int

    @staticmethod
    def of(layer: Layer, variant: WinogradVariant, part: Partition) -> Geometry:
        ranges = DataRanges.of(layer, variant, part)
        th, tw = variant.tiles(layer)
        n_eb, n_kb = ranges.points.count, ranges.gemm_k.count
        return Geometry(
            tiles_h=th, tiles_w=tw, num_tiles=ranges.tiles.total,
            n_g=ranges.tiles.count, s_i=ranges.input_c.count, s_g=n_eb * n_kb,
            s_o=ranges.output_k.count, n_f=ranges.filter_k.count, n_eb=n_eb, n_kb=n_kb,
        )

    @property
    def num_tasks(self) -> int:
        return self.n_f + self.n_g * (self.s_i + self.s_g + self.s_o)

    def first_task(self, op: Op) -> int:
        return {Op.FILTER_TRANSFORM: 0,
                Op.INPUT_TRANSFORM: self.n_f,
                Op.GEMM: self.n_f + self.n_g * self.s_i,
                Op.OUTPUT_TRANSFORM: self.n_f + self.n_g * (self.s_i + self.s_g)}[op]

    def input_counter(self, group):
        return 1 + group

    def gemm_counter(self, group):
        return 1 + self.n_g + group

    @property
    def num_counters(self) -> int:
        return 1 + 2 * self.n_g


@dataclass(frozen=True, eq=False)
class TaskGraph:
    layer: Layer
    variant: WinogradVariant
    partition: Partition
    geometry: Geometry
    ranges: DataRanges        # what each task reads and writes
    op: np.ndarray            # int8[T]
    group: np.ndarray         # int32[T], -1 for filter transforms
    index: np.ndarray         # int32[T], index inside the group (j of Algorithm 1)
    flops: np.ndarray         # float64[T]
    waits_on: np.ndarray      # int32[T, 2], counter ids or -1
    signals: np.ndarray       # int32[T], counter id or -1
    counter_init: np.ndarray  # int32[num_counters]
    group_tiles: np.ndarray   # int64[N_G]
    regions: RegionLayout
    read_ptr: np.ndarray      # int64[T+1] into read_region / read_bytes
    read_region: np.ndarray
    read_bytes: np.ndarray
    write_ptr: np.ndarray
    write_region: np.ndarray
    write_bytes: np.ndarray
    issued_flops: np.ndarray | None = None  # float64[T], what the code issues (megasim.contract.work); None: flops
    serial_steps: np.ndarray | None = None  # int64[T], steps on a block's critical path; None: none

    @property
    def num_tasks(self) -> int:
        return len(self.op)

    def tasks_of(self, op: Op) -> np.ndarray:
        start = self.geometry.first_task(op)
        nxt = [self.geometry.first_task(o) for o in Op if o > op]
        return np.arange(start, nxt[0] if nxt else self.num_tasks, dtype=np.int64)

    def parents_of_counter(self, counter: int) -> np.ndarray:
        return np.flatnonzero(self.signals == counter)

    def bytes_per_task(self) -> tuple[np.ndarray, np.ndarray]:
        """Unique bytes read and written by each task (no cache)."""
        rd = np.add.reduceat(np.append(self.read_bytes, 0), self.read_ptr[:-1]) * (np.diff(self.read_ptr) > 0)
        wr = np.add.reduceat(np.append(self.write_bytes, 0), self.write_ptr[:-1]) * (np.diff(self.write_ptr) > 0)
        return rd.astype(np.float64), wr.astype(np.float64)

    def summary(self) -> dict:
        g = self.geometry
        return {"N_F": g.n_f, "S_I": g.s_i, "S_G": g.s_g, "S_O": g.s_o, "N_G": g.n_g,
                "tasks": self.num_tasks, "tiles": g.num_tiles,
                "gflop": float(self.flops.sum()) / 1e9}


def build_graph(layer: Layer, variant: WinogradVariant | None = None,
                partition: Partition | None = None) -> TaskGraph:
    """Layer + variant + partition -> TaskGraph, with no per-task Python objects.

    A graph that would not fit in memory is refused first, with its size (`megasim.contract.size`).
    """
    variant = variant or WinogradVariant()
    part = partition or Partition()
    ranges = DataRanges.of(layer, variant, part)
    geo = Geometry.of(layer, variant, part)
    check_size(ranges, geo.num_tasks)
    fl = transform_flops(variant.m)
    ng = geo.n_g

    group_tiles, k_filter, c_input = ranges.tiles.sizes(), ranges.filter_k.sizes(), ranges.input_c.sizes()
    mats, k_gemm, k_out = ranges.points.sizes(), ranges.gemm_k.sizes(), ranges.output_k.sizes()

    def per_group(count):
        grp = np.repeat(np.arange(ng, dtype=np.int32), count)
        idx = np.tile(np.arange(count, dtype=np.int32), ng)
        return grp, idx

    g_in, i_in = per_group(geo.s_i)
    g_ge, i_ge = per_group(geo.s_g)
    g_out, i_out = per_group(geo.s_o)
    eb, kb = i_ge // geo.n_kb, i_ge % geo.n_kb

    op = np.concatenate([np.full(geo.n_f, Op.FILTER_TRANSFORM), np.full(len(g_in), Op.INPUT_TRANSFORM),
                         np.full(len(g_ge), Op.GEMM), np.full(len(g_out), Op.OUTPUT_TRANSFORM)]).astype(np.int8)
    group = np.concatenate([np.full(geo.n_f, -1, dtype=np.int32), g_in, g_ge, g_out])
    index = np.concatenate([np.arange(geo.n_f, dtype=np.int32), i_in, i_ge, i_out])
    flops = np.concatenate([
        k_filter * layer.c * fl.filter_per_kc,
        group_tiles[g_in] * c_input[i_in] * fl.input_per_tile_channel,
        2.0 * group_tiles[g_ge] * layer.c * k_gemm[kb] * mats[eb],
        group_tiles[g_out] * k_out[i_out] * fl.output_per_tile_channel,
    ]).astype(np.float64)

    waits_on = np.full((geo.num_tasks, 2), NO_COUNTER, dtype=np.int32)
    signals = np.full(geo.num_tasks, NO_COUNTER, dtype=np.int32)
    f0, i0, g0, o0 = (geo.first_task(o) for o in Op)
    signals[f0:i0] = FILTER_COUNTER
    signals[i0:g0] = geo.input_counter(g_in)
    signals[g0:o0] = geo.gemm_counter(g_ge)
    waits_on[g0:o0, 0] = FILTER_COUNTER
    waits_on[g0:o0, 1] = geo.input_counter(g_ge)
    waits_on[o0:, 0] = geo.gemm_counter(g_out)
    counter_init = np.concatenate([[geo.n_f], np.full(ng, geo.s_i), np.full(ng, geo.s_g)]).astype(np.int32)

    regions, reads, writes = build_accesses(ranges, geo)
    graph = TaskGraph(layer=layer, variant=variant, partition=part, geometry=geo, ranges=ranges,
                     op=op, group=group, index=index, flops=flops,
                     waits_on=waits_on, signals=signals, counter_init=counter_init,
                     group_tiles=group_tiles, regions=regions,
                     read_ptr=reads[0], read_region=reads[1], read_bytes=reads[2],
                     write_ptr=writes[0], write_region=writes[1], write_bytes=writes[2])
    graph = replace(graph, serial_steps=serial_steps(graph))
    return replace(graph, issued_flops=issued_flops(graph))


__all__ = ["FLOAT_BYTES", "FILTER_COUNTER", "NO_COUNTER", "Geometry", "TaskGraph", "build_graph"]
