"""Network files (`scenarios/networks/*.toml`) in full: the layers, and what the Winograd path leaves out.

A network file lists the 3x3 stride-1 convolutions of one CNN as
`[[layers]]` entries, each a shape and how many times it occurs, so network
totals (paper Fig. 11) are a weighted sum over distinct shapes. Its
`uncovered` list names the convolutions the Winograd path does not run (1x1,
7x7, stride 2), with their counts and, optionally, shapes, so a network
report can say what its totals leave out and what share of the network's
convolution FLOPs they cover. Apart from megasim.app.catalog so that the
commands that never read a network do not build these classes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from megasim.app.catalog import _SHAPE, SCENARIOS, _find, _layer_from
from megasim.contract.errors import MegasimError
from megasim.io.files import read_toml
from megasim.contract.problem import Layer


@dataclass(frozen=True)
class NetworkLayer:
    """One `[[layers]]` entry: a 3x3 stride-1 convolution and how often the network has it."""

    name: str
    layer: Layer
    count: int


@dataclass(frozen=True)
class UncoveredConv:
    """One `uncovered` entry: a convolution the Winograd path does not run (1x1, 7x7, stride 2).

    `c`, `h`, `w` (its input), `k` are optional, all four or none; with them its FLOPs are known.
    """

    name: str
    kernel: int
    stride: int
    count: int
    reason: str
    n: int | None = None
    c: int | None = None
    h: int | None = None
    w: int | None = None
    k: int | None = None

    @property
    def direct_flops(self) -> int | None:
        """2 N K C r^2 Ho Wo, with the usual padding of r // 2."""
        if None in (self.n, self.c, self.h, self.w, self.k):
            return None
        pad = self.kernel // 2
        ho, wo = ((d + 2 * pad - self.kernel) // self.stride + 1 for d in (self.h, self.w))
        return 2 * self.n * self.k * self.c * self.kernel ** 2 * ho * wo


@dataclass(frozen=True)
class Network:
    """A network file: its 3x3 stride-1 layers, and the convolutions it lists as not covered.

    `uncovered` is None where the file does not say (then nobody knows what was left out), and
    empty where it says there is nothing (VGG-16).
    """

    name: str
    source: str
    layers: tuple[NetworkLayer, ...]
    uncovered: tuple[UncoveredConv, ...] | None


def _count(entry: dict, where: str) -> int:
    count = entry.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise MegasimError(f"{where}: count must be a positive integer, got {count!r}")
    return count


def _uncovered(entry, where: str, n) -> UncoveredConv:
    if not isinstance(entry, dict):
        raise MegasimError(f"{where}: expected a table")
    for f in ("kernel", "stride"):
        v = entry.get(f)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise MegasimError(f"{where}: {f} must be a positive integer, got {v!r}")
    kernel, stride = entry["kernel"], entry["stride"]
    reason = entry.get("reason")
    if (kernel, stride) == (3, 1) and not reason:
        raise MegasimError(f"{where}: a 3x3 stride-1 convolution is covered; list it under [[layers]] "
                           "or give the reason it is not")
    shape = {f: entry[f] for f in _SHAPE if f in entry}
    if shape:
        shape = _layer_from({"n": n, **shape} if n is not None else shape, "", where)
        shape = {f: getattr(shape, f) for f in _SHAPE}
    default = f"{kernel}x{kernel} kernel" if kernel != 3 else ""
    default = ", ".join(x for x in (default, f"stride {stride}" if stride != 1 else "") if x)
    return UncoveredConv(str(entry.get("name", where)), kernel, stride, _count(entry, where),
                         str(reason or default), **shape)


def load_network_spec(name: str, root: Path = SCENARIOS) -> Network:
    """Network `name` (any case): its [[layers]] and its `uncovered` convolutions."""
    path = _find("network", root / "networks", name)
    data = read_toml(path)
    origin = str(path)
    entries = data.get("layers")
    if not isinstance(entries, list) or not entries:
        raise MegasimError(f"{origin}: needs at least one [[layers]] entry")
    n = data.get("n")
    net = data.get("name", path.stem)
    layers = []
    for i, entry in enumerate(entries):
        where = f"{origin}: layers[{i}]"
        if not isinstance(entry, dict):
            raise MegasimError(f"{where}: expected a table")
        count = _count(entry, where)
        shape = dict(entry) if n is None else {"n": n, **entry}
        label = str(entry.get("name", i))
        layers.append(NetworkLayer(label, _layer_from(shape, f"{net}/{label}", where), count))
    listed = data.get("uncovered")
    if listed is not None and not isinstance(listed, list):
        raise MegasimError(f"{origin}: uncovered must be a list of tables")
    uncovered = None if listed is None else tuple(
        _uncovered(entry, f"{origin}: uncovered[{i}]", n) for i, entry in enumerate(listed))
    return Network(str(net), str(data.get("source", "")), tuple(layers), uncovered)
