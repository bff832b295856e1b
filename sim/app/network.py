"""Whole networks: each distinct 3x3 stride-1 layer run once, its times weighted by its count.

`megasim simulate --network` and `megasim bench --network` share everything
here: which mapping each layer runs under, which layers are the same run, the
per-layer rows, the totals and what the totals leave out. They differ only in
the function that times one layer (the SimPy engine, or the GPU).

A layer runs under the default mapping of the command's flags unless a
mapping folder holds a file for it: DIR/<layer>/best.json (what
`megasim search --network` writes) or DIR/<layer>.json, where <layer> is the
entry's name in the network file (e.g. conv4_x). Two entries of the same
shape under the same mapping are one run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from megasim.app.network_spec import Network, NetworkLayer
from megasim.contract.errors import MegasimError
from megasim.io.files import regular_file
from megasim.contract.problem import Layer

MAPPING_FILES = ("<layer>/best.json", "<layer>.json")  # megasim.app.cli's MAPPINGS_HELP says the same


@dataclass(frozen=True)
class LayerTimes:
    """What one run of one layer gives: fused and non-fused time of one occurrence, and details."""

    fused_us: float
    nonfused_us: float
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    entry: NetworkLayer
    mapping: Path | None
    times: LayerTimes

    def to_json(self) -> dict:
        layer, t, count = self.entry.layer, self.times, self.entry.count
        row = {"name": self.entry.name, "n": layer.n, "c": layer.c, "h": layer.h, "w": layer.w, "k": layer.k,
               "count": count, "mapping": str(self.mapping) if self.mapping else "default",
               "fused_us": t.fused_us, "nonfused_us": t.nonfused_us, "speedup": t.nonfused_us / t.fused_us,
               "fused_total_us": count * t.fused_us, "nonfused_total_us": count * t.nonfused_us}
        return {**row, **{k: v for k, v in t.detail.items() if k not in row}}


def mapping_file(folder: Path, entry: NetworkLayer) -> Path | None:
    """The mapping file `folder` holds for a layer, or None. <layer> is the entry's name (conv4_x), or its
    full layer name (ResNet-50/conv4_x, a subfolder per network). Whatever is there by that name must be a
    regular file: a FIFO would hang the read, and skipping a folder or a broken link would run the default
    mapping in its place without a word."""
    for name in (entry.name, entry.layer.name):
        for pattern in MAPPING_FILES:
            path = folder / pattern.replace("<layer>", name)
            if os.path.lexists(path):
                return regular_file(path)
    return None


def plan(net: Network, mappings: str | None) -> list[tuple[NetworkLayer, Path | None]]:
    """Each layer with its mapping file (None: the default mapping). A folder that gives none is an error."""
    if mappings is None:
        return [(entry, None) for entry in net.layers]
    folder = Path(mappings)
    if not folder.is_dir():
        raise MegasimError(f"--mappings {mappings}: not a folder")
    out = [(entry, mapping_file(folder, entry)) for entry in net.layers]
    if all(path is None for _, path in out):
        names = ", ".join(entry.name for entry in net.layers)
        raise MegasimError(f"--mappings {mappings}: no mapping file for any layer of {net.name} "
                           f"(looked for {' or '.join(MAPPING_FILES)} with <layer> one of {names})")
    return out


def _key(layer: Layer, mapping: Path | None) -> tuple:
    return layer.n, layer.c, layer.h, layer.w, layer.k, str(mapping)


def run_rows(jobs: list[tuple[NetworkLayer, Path | None]],
             measure: Callable[[NetworkLayer, Path | None], LayerTimes]) -> list[Row]:
    """One row per layer; `measure` is called once per distinct (shape, mapping)."""
    done: dict[tuple, LayerTimes] = {}
    rows = []
    for entry, mapping in jobs:
        key = _key(entry.layer, mapping)
        if key not in done:
            done[key] = measure(entry, mapping)
        rows.append(Row(entry, mapping, done[key]))
    return rows


def totals(net: Network, rows: list[Row]) -> dict:
    """Count-weighted sums over the rows, and what they cover of the network's convolutions."""
    fused = sum(r.entry.count * r.times.fused_us for r in rows)
    nonfused = sum(r.entry.count * r.times.nonfused_us for r in rows)
    covered = sum(r.entry.count for r in rows)
    out = {"fused_us": fused, "nonfused_us": nonfused, "speedup": nonfused / fused,
           "best_of_each_us": sum(r.entry.count * min(r.times.fused_us, r.times.nonfused_us) for r in rows),
           "layers": len(rows), "distinct_runs": len({_key(r.entry.layer, r.mapping) for r in rows}),
           "covered_convs": covered, "uncovered_convs": None, "covered_flop_share": None}
    if net.uncovered is not None:
        out["uncovered_convs"] = sum(u.count for u in net.uncovered)
        flops = [u.direct_flops for u in net.uncovered]
        if None not in flops:
            mine = sum(r.entry.count * r.entry.layer.direct_flops for r in rows)
            out["covered_flop_share"] = mine / (mine + sum(f * u.count for f, u in zip(flops, net.uncovered)))
    return out


def uncovered_json(net: Network) -> list[dict] | None:
    if net.uncovered is None:
        return None
    return [{"name": u.name, "kernel": u.kernel, "stride": u.stride, "count": u.count, "reason": u.reason,
             **{f: getattr(u, f) for f in "nchwk" if getattr(u, f) is not None}} for u in net.uncovered]


def report(net: Network, rows: list[Row], header: dict) -> dict:
    """The JSON of a network run: `header` (gpu, model, ...), the rows, the totals, the uncovered convs."""
    return {"network": net.name, **header, "layers": [r.to_json() for r in rows], "totals": totals(net, rows),
            "uncovered": uncovered_json(net)}
