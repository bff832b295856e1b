"""The simulator's L2 regions cover exactly the elements the emulator reads and writes, task by task.

The emulator runs every task on buffers that log each element handed out
or stored through indexing. Each logged element is mapped to the region
holding it by the region grid (written out below from the definitions in
`megasim.contract.regions`), and the graph's read and write lists must name
exactly those regions, charging FLOAT_BYTES per element. The one
multiplicity is deliberate: an input task is charged once per tile row of
its group whose patches contain the element, so halo rows shared by two
tile rows count twice.
"""
import dataclasses

import numpy as np
import pytest

from megasim.contract.graph import build_graph
from megasim.contract.problem import FLOAT_BYTES, Layer, Op, Partition, WinogradVariant
from megasim.contract.regions import INPUT_CHUNK_TILES, Buffer
from megasim.gpu.emulator import EmulatorBuffers, run_task

CASES = {
    # ragged H and W, short last group, channel, point and K blocks; filter and output blocks straddle GEMM K blocks
    "F2-ragged": (Layer(n=2, c=5, h=7, w=9, k=6), 2,
                  Partition(tiles_per_group=7, input_channels_per_task=2, gemm_mats_per_task=5,
                            gemm_k_per_task=4, output_channels_per_task=3, filter_k_per_task=4, threads=32)),
    # groups span several tile rows of two images: halo rows shared inside a group
    "F4-multirow": (Layer(n=2, c=8, h=10, w=9, k=8), 4,
                    Partition(tiles_per_group=4, input_channels_per_task=4, gemm_mats_per_task=9,
                              gemm_k_per_task=4, output_channels_per_task=4, filter_k_per_task=2, threads=64)),
    # wide rows: several input chunks per band, groups that break at a tile row
    "F4-wide": (Layer(n=1, c=3, h=6, w=70, k=5), 4,
                Partition(tiles_per_group=20, input_channels_per_task=2, gemm_mats_per_task=8,
                          gemm_k_per_task=2, output_channels_per_task=3, filter_k_per_task=3, threads=32)),
    "F6-ragged": (Layer(n=1, c=4, h=13, w=11, k=7), 6,
                  Partition(tiles_per_group=3, input_channels_per_task=3, gemm_mats_per_task=7,
                            gemm_k_per_task=3, output_channels_per_task=5, filter_k_per_task=2, threads=32)),
}
BUFFERS = ("x", "w", "U", "V", "M", "y")


class Recording(np.ndarray):
    """An array that logs the flat index of every element read or written through indexing."""

    def __new__(cls, array, name, log):
        obj = np.asarray(array).view(cls)
        obj.name, obj.log = name, log
        return obj

    def _elements(self, key):
        return np.arange(self.size).reshape(self.shape)[key].ravel()

    def __getitem__(self, key):
        self.log.append(("read", self.name, self._elements(key)))
        return self.view(np.ndarray)[key]

    def __setitem__(self, key, value):
        self.log.append(("write", self.name, self._elements(key)))
        self.view(np.ndarray)[key] = value


def region_of(graph, name, index):
    """Region id of each element (unravelled index) of buffer `name`, from the region grid."""
    p, g, m, base = graph.partition, graph.geometry, graph.variant.m, graph.regions.base
    if name == "x":
        img, row, col, ch = index
        chunks = -(-g.tiles_w // INPUT_CHUNK_TILES)
        band_chunk = (img * g.tiles_h + row // m) * chunks + col // (INPUT_CHUNK_TILES * m)
        return base[Buffer.INPUT] + band_chunk * g.s_i + ch // p.input_channels_per_task
    if name == "w":
        return base[Buffer.FILTER] + index[0] // p.filter_k_per_task
    if name == "y":
        img, row, col, k = index
        group = ((img * g.tiles_h + row // m) * g.tiles_w + col // m) // p.tiles_per_group
        return base[Buffer.OUTPUT] + group * g.s_o + k // p.output_channels_per_task
    e, second, third = index
    eb = e // p.gemm_mats_per_task
    if name == "U":
        return base[Buffer.U] + eb * g.n_kb + third // p.gemm_k_per_task
    group_eb = second // p.tiles_per_group * g.n_eb + eb
    if name == "V":
        return base[Buffer.V] + group_eb * g.s_i + third // p.input_channels_per_task
    return base[Buffer.M] + group_eb * g.n_kb + third // p.gemm_k_per_task


def tile_row_charges(graph, group_tiles, img, row, col):
    """How many tile rows of the group have a patch containing input element (img, row, col)."""
    g, m = graph.geometry, graph.variant.m
    charges = np.zeros(len(row), dtype=np.int64)
    for tile_row in np.unique(group_tiles // g.tiles_w):
        tj = group_tiles[group_tiles // g.tiles_w == tile_row] % g.tiles_w
        ti = tile_row % g.tiles_h
        charges += ((img == tile_row // g.tiles_h) & (row >= ti * m - 1) & (row < ti * m + m + 1)
                    & (col >= tj.min() * m - 1) & (col < tj.max() * m + m + 1))
    return charges


def emulated_charges(graph, ws, log, task):
    """{direction: {region: bytes}} that the emulator's accesses of one task imply."""
    touched = {}
    for direction, name, flat in log:
        touched.setdefault((direction, name), []).append(flat)
    charges = {"read": {}, "write": {}}
    for (direction, name), flats in touched.items():
        index = np.unravel_index(np.unique(np.concatenate(flats)), getattr(ws, name).shape)
        weight = np.ones(len(index[0]), dtype=np.int64)
        if name == "x":
            group_tiles = np.unique(np.unravel_index(np.concatenate(touched["write", "V"]), ws.V.shape)[1])
            weight = tile_row_charges(graph, group_tiles, *index[:3])
            assert weight.min() >= 1, f"task {task} reads input outside its tile rows' patches"
        regions, which = np.unique(region_of(graph, name, index), return_inverse=True)
        elements = np.bincount(which, weights=weight).astype(np.int64)
        charges[direction].update(zip(regions.tolist(), (elements * FLOAT_BYTES).tolist(), strict=True))
    return charges


def modelled_charges(graph, task):
    """{direction: {region: bytes}} from the graph's read and write lists."""
    out = {}
    for direction, ptr, region, nbytes in (("read", graph.read_ptr, graph.read_region, graph.read_bytes),
                                           ("write", graph.write_ptr, graph.write_region, graph.write_bytes)):
        lo, hi = ptr[task], ptr[task + 1]
        out[direction] = dict(zip(region[lo:hi].tolist(), nbytes[lo:hi].tolist(), strict=True))
        assert len(out[direction]) == hi - lo, f"task {task} lists a region twice"
    return out


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_regions_cover_exactly_what_the_emulator_touches(case):
    layer, m, part = case
    graph = build_graph(layer, WinogradVariant(m), part)
    rng = np.random.default_rng(0)
    ws = EmulatorBuffers.allocate(graph, rng.standard_normal((layer.n, layer.h, layer.w, layer.c)),
                            rng.standard_normal((layer.k, 3, 3, layer.c)), np.float64)
    log = []
    ws = dataclasses.replace(ws, **{name: Recording(getattr(ws, name), name, log) for name in BUFFERS})
    for task in range(graph.num_tasks):
        log.clear()
        run_task(graph, ws, task)
        emulated, modelled = emulated_charges(graph, ws, log, task), modelled_charges(graph, task)
        op = Op(graph.op[task]).name
        for direction in ("read", "write"):
            assert modelled[direction] == emulated[direction], f"task {task} ({op}) {direction}s"
    assert not np.isnan(np.asarray(ws.y)).any()


def test_cases_reach_every_region_kind_multirow_groups_and_short_blocks():
    graphs = {name: build_graph(layer, WinogradVariant(m), part) for name, (layer, m, part) in CASES.items()}
    for graph in graphs.values():
        assert set(np.unique(graph.regions.kind)) == set(Buffer)
    assert graphs["F4-multirow"].partition.tiles_per_group > graphs["F4-multirow"].geometry.tiles_w
    assert graphs["F4-wide"].geometry.tiles_w > INPUT_CHUNK_TILES
    layer, m, part = CASES["F2-ragged"]
    assert layer.h % m and layer.w % m and layer.c % part.input_channels_per_task
    assert (m + 2) ** 2 % part.gemm_mats_per_task and layer.k % part.gemm_k_per_task
    assert graphs["F2-ragged"].geometry.num_tiles % part.tiles_per_group
