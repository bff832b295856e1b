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

Each access carries the exact bytes it moves; hit or miss is decided per
region. Where a task reads only part of a region (the halo row of a band)
it is charged the part it reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from megasim.contract.problem import FLOAT_BYTES, Op

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

    @property
    def num_regions(self) -> int:
        return len(self.kind)


def _csr(task, region, nbytes, num_tasks):
    task = np.concatenate(task).astype(np.int64)
    region = np.concatenate(region).astype(np.int32)
    nbytes = np.concatenate(nbytes).astype(np.int64)
    order = np.argsort(task, kind="stable")
    ptr = np.searchsorted(task[order], np.arange(num_tasks + 1))
    return ptr.astype(np.int64), region[order], nbytes[order]


def _input_footprints(layer, variant, part, geo):
    """Per group: (region-without-channel-block, input pixels read) pairs."""
    m, th, tw = variant.m, geo.tiles_h, geo.tiles_w
    nq = -(-tw // INPUT_CHUNK_TILES)
    chunk_cols = INPUT_CHUNK_TILES * m
    out = []
    for g in range(geo.n_g):
        first = g * part.tiles_per_group
        last = min(first + part.tiles_per_group, geo.num_tiles) - 1
        acc: dict[int, int] = {}
        tile = first
        while tile <= last:
            img, rest = divmod(tile, th * tw)
            ti, tj0 = divmod(rest, tw)
            tj1 = min(tw - 1, tj0 + (last - tile))
            r0, r1 = max(0, ti * m - 1), min(layer.h, ti * m + m + 1)
            c0, c1 = max(0, tj0 * m - 1), min(layer.w, tj1 * m + m + 1)
            for band in range(r0 // m, (r1 - 1) // m + 1):
                rows = min(r1, band * m + m) - max(r0, band * m)
                for q in range(c0 // chunk_cols, (c1 - 1) // chunk_cols + 1):
                    cols = min(c1, (q + 1) * chunk_cols) - max(c0, q * chunk_cols)
                    key = (img * th + band) * nq + q
                    acc[key] = acc.get(key, 0) + rows * cols
            tile += tj1 - tj0 + 1
        out.append(acc)
    return out, nq


def build_accesses(layer, variant, part, geo, group_tiles, blocks):
    """Region layout plus (ptr, region, bytes) CSR columns for reads and writes."""
    k_filter, c_input, mats = blocks["k_filter"], blocks["c_input"], blocks["mats"]
    k_gemm, k_out = blocks["k_gemm"], blocks["k_out"]
    ng, si, so, neb, nkb = geo.n_g, geo.s_i, geo.s_o, geo.n_eb, geo.n_kb
    footprints, nq = _input_footprints(layer, variant, part, geo)

    counts = {Buffer.INPUT: layer.n * geo.tiles_h * nq * si, Buffer.FILTER: geo.n_f,
              Buffer.U: neb * nkb, Buffer.V: ng * neb * si, Buffer.M: ng * neb * nkb,
              Buffer.OUTPUT: ng * so}
    base, start = {}, 0
    for kind in Buffer:
        base[kind] = start
        start += counts[kind]
    kind_col = np.concatenate([np.full(counts[k], k, dtype=np.int8) for k in Buffer])
    layout = RegionLayout(base=base, kind=kind_col)

    f0, i0, g0, o0 = (geo.first_task(op) for op in Op)
    B = FLOAT_BYTES
    R_t, R_r, R_b, W_t, W_r, W_b = [], [], [], [], [], []

    # filter transform f: reads its raw filters, writes its K columns of every U slice
    fidx = np.arange(geo.n_f)
    R_t.append(f0 + fidx); R_r.append(base[Buffer.FILTER] + fidx); R_b.append(k_filter * layer.c * 9 * B)
    k_lo = np.concatenate([[0], np.cumsum(k_filter)[:-1]])
    kg_lo = np.concatenate([[0], np.cumsum(k_gemm)[:-1]])
    for kbi in range(nkb):
        overlap = np.clip(np.minimum(k_lo + k_filter, kg_lo[kbi] + k_gemm[kbi]) - np.maximum(k_lo, kg_lo[kbi]), 0, None)
        touching = np.flatnonzero(overlap)
        for e in range(neb):
            W_t.append(f0 + touching)
            W_r.append(np.full(len(touching), base[Buffer.U] + e * nkb + kbi))
            W_b.append(mats[e] * layer.c * overlap[touching] * B)

    # input transform (g, cb): reads its input bands, writes V(g, *, cb)
    for g, acc in enumerate(footprints):
        keys = np.fromiter(acc.keys(), dtype=np.int64, count=len(acc))
        px = np.fromiter(acc.values(), dtype=np.int64, count=len(acc))
        for cb in range(si):
            R_t.append(np.full(len(keys), i0 + g * si + cb))
            R_r.append(base[Buffer.INPUT] + keys * si + cb)
            R_b.append(px * c_input[cb] * B)
    gi, cbi, ei = np.meshgrid(np.arange(ng), np.arange(si), np.arange(neb), indexing="ij")
    gi, cbi, ei = gi.ravel(), cbi.ravel(), ei.ravel()
    v_region = base[Buffer.V] + (gi * neb + ei) * si + cbi
    W_t.append(i0 + gi * si + cbi); W_r.append(v_region)
    W_b.append(group_tiles[gi] * mats[ei] * c_input[cbi] * B)

    # GEMM (g, e, kb): reads V(g, e, *) and U(e, kb), writes M(g, e, kb)
    for kbi in range(nkb):
        R_t.append(g0 + gi * geo.s_g + ei * nkb + kbi)
        R_r.append(v_region)
        R_b.append(group_tiles[gi] * mats[ei] * c_input[cbi] * B)
    gg, ee, kk = (a.ravel() for a in np.meshgrid(np.arange(ng), np.arange(neb), np.arange(nkb), indexing="ij"))
    gemm_task = g0 + gg * geo.s_g + ee * nkb + kk
    m_region = base[Buffer.M] + (gg * neb + ee) * nkb + kk
    R_t.append(gemm_task); R_r.append(base[Buffer.U] + ee * nkb + kk)
    R_b.append(mats[ee] * layer.c * k_gemm[kk] * B)
    W_t.append(gemm_task); W_r.append(m_region); W_b.append(group_tiles[gg] * mats[ee] * k_gemm[kk] * B)

    # output transform (g, ob): reads M(g, *, kb overlapping its channels), writes OUTPUT(g, ob)
    ko_lo = np.concatenate([[0], np.cumsum(k_out)[:-1]])
    for ob in range(so):
        lo, hi = ko_lo[ob], ko_lo[ob] + k_out[ob]
        overlap = np.clip(np.minimum(hi, kg_lo + k_gemm) - np.maximum(lo, kg_lo), 0, None)
        for kbi in np.flatnonzero(overlap):
            for e in range(neb):
                g_all = np.arange(ng)
                R_t.append(o0 + g_all * so + ob)
                R_r.append(base[Buffer.M] + (g_all * neb + e) * nkb + kbi)
                R_b.append(group_tiles * mats[e] * overlap[kbi] * B)
    valid_px = _valid_output_pixels(layer, variant, part, geo)
    go, oo = (a.ravel() for a in np.meshgrid(np.arange(ng), np.arange(so), indexing="ij"))
    W_t.append(o0 + go * so + oo); W_r.append(base[Buffer.OUTPUT] + go * so + oo)
    W_b.append(valid_px[go] * k_out[oo] * B)

    return layout, _csr(R_t, R_r, R_b, geo.num_tasks), _csr(W_t, W_r, W_b, geo.num_tasks)


def _valid_output_pixels(layer, variant, part, geo):
    """Output pixels each group writes: ragged edge tiles write fewer than m^2."""
    m = variant.m
    tile = np.arange(geo.num_tiles)
    rest = tile % (geo.tiles_h * geo.tiles_w)
    ti, tj = rest // geo.tiles_w, rest % geo.tiles_w
    px = np.minimum(m, layer.h - ti * m) * np.minimum(m, layer.w - tj * m)
    starts = np.arange(0, geo.num_tiles, part.tiles_per_group)
    return np.add.reduceat(px, starts).astype(np.int64)

