"""Named buffer regions: the unit the L2 model tracks.

A region is a piece of one buffer that tasks touch as a whole, sized so the
paper's three reuse types show up between tasks:

- INPUT  (image, band of m input rows, chunk of INPUT_CHUNK_TILES tile columns,
  channel block). Neighbouring tile rows share the halo rows of a band: reuse (a).
- FILTER (filter-transform task): raw 3x3 filters, read once.
- U      (Winograd-point block, K block): one transformed-filter slice, "the j-th
  filter matrix" that the same GEMM task of every group reads: reuse (b).
- V      (group, point block, channel block): transformed input, producer->consumer (c).
- M      (group, point block, K block): GEMM result, producer->consumer (c).
- OUTPUT (group, output-channel block): written once.

Each access carries the exact bytes it moves, counted from the task's data
ranges (`megasim.contract.ranges`); hit or miss is decided per region. Where
a task reads only part of a region (the halo row of a band) it is charged
the part it reads. An input task is charged per tile row of its group, so
the two halo rows that neighbouring tile rows share are charged twice.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from megasim.contract.problem import FLOAT_BYTES, Op
from megasim.contract.ranges import DataRanges

INPUT_CHUNK_TILES = 8


class Buffer(IntEnum):
    INPUT = 0
    FILTER = 1
    U = 2
    V = 3
    M = 4
    OUTPUT = 5


@dataclass(frozen=True, eq=False)
class RegionLayout:
    """Region id ranges per buffer kind; ids are dense from 0."""

    base: dict           # Buffer -> first region id
    kind: np.ndarray     # int8[num_regions]

    @staticmethod
    def of(counts: dict) -> RegionLayout:
        starts = np.cumsum([0] + [counts[k] for k in Buffer])
        return RegionLayout(base={k: int(starts[k]) for k in Buffer},
                            kind=np.repeat(np.array(list(Buffer), dtype=np.int8), [counts[k] for k in Buffer]))

    @property
    def num_regions(self) -> int:
        return len(self.kind)


def _concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """starts[i], starts[i]+1, ..., starts[i]+lengths[i]-1 for every i, concatenated."""
    ends = np.cumsum(lengths)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - lengths - starts, lengths)


def _input_chunks(r: DataRanges) -> int:
    return -(-r.variant.tiles(r.layer)[1] // INPUT_CHUNK_TILES)


def _input_footprints(r: DataRanges):
    """Per group, in first-touch order: (group, INPUT region without its channel block, pixels read).

    Each run's input box is cut at band and chunk edges; pieces of one
    group that land in the same region add up.
    """
    m, th, nq = r.variant.m, r.variant.tiles(r.layer)[0], _input_chunks(r)
    chunk = INPUT_CHUNK_TILES * m
    runs = r.tile_runs()
    (rlo, rhi), (clo, chi) = runs.in_rows, runs.in_cols
    band0, chunk0 = rlo // m, clo // chunk
    n_chunks = (chi - 1) // chunk - chunk0 + 1
    per_run = ((rhi - 1) // m - band0 + 1) * n_chunks
    run = np.repeat(np.arange(len(per_run)), per_run)
    step = _concat_ranges(np.zeros_like(per_run), per_run)
    band = band0[run] + step // n_chunks[run]
    q = chunk0[run] + step % n_chunks[run]
    pixels = ((np.minimum(rhi[run], band * m + m) - np.maximum(rlo[run], band * m))
              * (np.minimum(chi[run], (q + 1) * chunk) - np.maximum(clo[run], q * chunk)))
    num_keys = r.layer.n * th * nq
    group_key = runs.group[run] * num_keys + (runs.image[run] * th + band) * nq + q
    order = np.argsort(group_key, kind="stable")
    first = np.flatnonzero(np.diff(group_key[order], prepend=-1))
    summed = np.add.reduceat(pixels[order], first)
    by_first_touch = np.argsort(order[first])
    keys = group_key[order[first]][by_first_touch]
    return keys // num_keys, keys % num_keys, summed[by_first_touch]


def _filter_accesses(r, layout, f0):
    """Filter task f reads its raw filters and writes its K columns of every U slice."""
    base, neb, c = layout.base, r.points.count, r.layer.c
    reads = (f0 + np.arange(r.filter_k.count), base[Buffer.FILTER] + np.arange(r.filter_k.count),
             r.filter_k.sizes() * c * 9)
    shared = r.filter_k.overlap(r.gemm_k)
    f, kb = np.nonzero(shared)
    e = np.tile(np.arange(neb), len(f))
    kb_e = np.repeat(kb, neb)
    writes = (f0 + np.repeat(f, neb), base[Buffer.U] + e * r.gemm_k.count + kb_e,
              r.points.sizes()[e] * c * np.repeat(shared[f, kb], neb))
    return reads, writes


def _input_accesses(r, layout, i0):
    """Input task (g, cb) reads its group's input pieces in channel block cb and writes V(g, *, cb)."""
    base, ng, si, neb = layout.base, r.tiles.count, r.input_c.count, r.points.count
    group, key, pixels = _input_footprints(r)
    first = np.searchsorted(group, np.arange(ng))
    count = np.diff(np.append(first, len(group)))
    pair_g, pair_cb = np.repeat(np.arange(ng), si), np.tile(np.arange(si), ng)
    idx = _concat_ranges(first[pair_g], count[pair_g])
    cb = np.repeat(pair_cb, count[pair_g])
    reads = (i0 + np.repeat(pair_g * si + pair_cb, count[pair_g]), base[Buffer.INPUT] + key[idx] * si + cb,
             pixels[idx] * r.input_c.sizes()[cb])
    g, cb, e = (a.ravel() for a in np.meshgrid(np.arange(ng), np.arange(si), np.arange(neb), indexing="ij"))
    writes = (i0 + g * si + cb, base[Buffer.V] + (g * neb + e) * si + cb,
              r.tiles.sizes()[g] * r.points.sizes()[e] * r.input_c.sizes()[cb])
    return reads, writes


def _gemm_accesses(r, layout, g0):
    """GEMM (g, e, kb) reads V(g, e, cb) for every cb, then U(e, kb); writes M(g, e, kb)."""
    base, si, neb, nkb = layout.base, r.input_c.count, r.points.count, r.gemm_k.count
    g, e, kb = (a.ravel() for a in np.meshgrid(np.arange(r.tiles.count), np.arange(neb), np.arange(nkb),
                                               indexing="ij"))
    task = g0 + (g * neb + e) * nkb + kb
    tile_points = r.tiles.sizes()[g] * r.points.sizes()[e]
    v_region = base[Buffer.V] + ((g * neb + e) * si)[:, None] + np.arange(si)
    region = np.hstack([v_region, (base[Buffer.U] + e * nkb + kb)[:, None]])
    elements = np.hstack([tile_points[:, None] * r.input_c.sizes(),
                          (r.points.sizes()[e] * r.layer.c * r.gemm_k.sizes()[kb])[:, None]])
    reads = (np.repeat(task, si + 1), region.ravel(), elements.ravel())
    writes = (task, base[Buffer.M] + (g * neb + e) * nkb + kb, tile_points * r.gemm_k.sizes()[kb])
    return reads, writes


def _output_accesses(r, layout, o0):
    """Output (g, ob) reads M(g, e, kb) for every kb overlapping its channels and every e; writes OUTPUT(g, ob)."""
    base, ng, so, neb, nkb = layout.base, r.tiles.count, r.output_k.count, r.points.count, r.gemm_k.count
    shared = r.output_k.overlap(r.gemm_k)
    ob, kb = np.nonzero(shared)
    ob, kb, e = np.repeat(ob, neb), np.repeat(kb, neb), np.tile(np.arange(neb), len(ob))
    first = np.searchsorted(ob, np.arange(so))
    count = np.bincount(ob, minlength=so)
    pair_g, pair_ob = np.repeat(np.arange(ng), so), np.tile(np.arange(so), ng)
    idx = _concat_ranges(first[pair_ob], count[pair_ob])
    g = np.repeat(pair_g, count[pair_ob])
    reads = (o0 + np.repeat(pair_g * so + pair_ob, count[pair_ob]),
             base[Buffer.M] + (g * neb + e[idx]) * nkb + kb[idx],
             r.tiles.sizes()[g] * r.points.sizes()[e[idx]] * shared[ob[idx], kb[idx]])
    writes = (o0 + pair_g * so + pair_ob, base[Buffer.OUTPUT] + pair_g * so + pair_ob,
              r.tile_runs().output_pixels_per_group()[pair_g] * r.output_k.sizes()[pair_ob])
    return reads, writes


def _csr(blocks, num_tasks):
    """(ptr, region, bytes) from per-op (task, region, elements) blocks already in task order."""
    task = np.concatenate([b[0] for b in blocks])
    region = np.concatenate([b[1] for b in blocks]).astype(np.int32)
    nbytes = np.concatenate([b[2] for b in blocks]).astype(np.int64) * FLOAT_BYTES
    return np.searchsorted(task, np.arange(num_tasks + 1)).astype(np.int64), region, nbytes


def build_accesses(ranges: DataRanges, geo):
    """Region layout plus (ptr, region, bytes) CSR columns for reads and writes."""
    r, ng = ranges, ranges.tiles.count
    th = r.variant.tiles(r.layer)[0]
    layout = RegionLayout.of({
        Buffer.INPUT: r.layer.n * th * _input_chunks(r) * r.input_c.count, Buffer.FILTER: r.filter_k.count,
        Buffer.U: r.points.count * r.gemm_k.count, Buffer.V: ng * r.points.count * r.input_c.count,
        Buffer.M: ng * r.points.count * r.gemm_k.count, Buffer.OUTPUT: ng * r.output_k.count})
    per_op = [access(r, layout, geo.first_task(op)) for op, access in
              ((Op.FILTER_TRANSFORM, _filter_accesses), (Op.INPUT_TRANSFORM, _input_accesses),
               (Op.GEMM, _gemm_accesses), (Op.OUTPUT_TRANSFORM, _output_accesses))]
    return (layout, _csr([reads for reads, _ in per_op], geo.num_tasks),
            _csr([writes for _, writes in per_op], geo.num_tasks))
