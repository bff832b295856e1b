"""Layers and networks as data: `scenarios/layers/*.toml`, `scenarios/networks/*.toml`.

A layer file is one 3x3 stride-1 convolution (paper Table 2): `name`, `n`,
`c`, `h`, `w`, `k` and a `source`. A network file lists the 3x3 stride-1
convolutions of one CNN as `[[layers]]` entries, each a shape and how many
times it occurs, so network totals (paper Fig. 11) are a weighted sum over
distinct shapes (megasim.app.network_spec reads the whole file, its
`uncovered` convolutions too). Names are matched case-insensitively; a shape
can also be given inline as "N,C,H,W,K". Every bad input is one MegasimError
that names the file or the string at fault.
"""
from __future__ import annotations

from pathlib import Path

import megasim.scenarios
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer, Partition
from megasim.io.files import read_toml
from megasim.contract.spec import spec_from_dict
from megasim.engine.model import GPUModel, model_from_table

SCENARIOS = Path(megasim.scenarios.__file__).parent  # package data on disk (importlib.resources: 8 ms more)

_SHAPE = ("n", "c", "h", "w", "k")


def _layer_from(data: dict, name: str, origin: str) -> Layer:
    missing = [f for f in _SHAPE if f not in data]
    if missing:
        raise MegasimError(f"{origin}: missing field(s) {missing}")
    for f in _SHAPE:
        v = data[f]
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise MegasimError(f"{origin}: {f} must be a positive integer, got {v!r}")
    return Layer(**{f: data[f] for f in _SHAPE}, name=name)


def _names(folder: Path) -> dict[str, Path]:
    return {p.stem.lower(): p for p in sorted(folder.glob("*.toml"))}


def _find(kind: str, folder: Path, name: str) -> Path:
    paths = _names(folder)
    path = paths.get(name.lower())
    if path is None:
        raise MegasimError(f"unknown {kind} {name!r}; known: {', '.join(paths)}")
    return path


def layer_names(root: Path = SCENARIOS) -> list[str]:
    return list(_names(root / "layers"))


def load_layer(name: str, root: Path = SCENARIOS) -> Layer:
    """The Table 2 layer `name` (any case), e.g. "ResNet-1" or "vgg-3"."""
    path = _find("layer", root / "layers", name)
    data = read_toml(path)
    label = data.get("name", path.stem)
    if not isinstance(label, str):
        raise MegasimError(f"{path}: name must be a string, got {label!r}")
    return _layer_from(data, label, str(path))


def parse_shape(text: str) -> Layer:
    """"N,C,H,W,K" -> Layer, e.g. "64,64,56,56,64" (ResNet-1)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 5:
        raise MegasimError(f"shape {text!r}: expected N,C,H,W,K (five integers)")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise MegasimError(f"shape {text!r}: expected N,C,H,W,K (five integers)") from None
    if any(v <= 0 for v in values):
        raise MegasimError(f"shape {text!r}: every dimension must be positive")
    return Layer(*values, name=f"{values[0]}x{values[1]}x{values[2]}x{values[3]}->{values[4]}")


def resolve_layer(name: str | None, shape: str | None, default: str = "ResNet-2") -> Layer:
    """The CLI's `--layer NAME` or `--shape N,C,H,W,K` (not both); `default` when neither is given."""
    if name and shape:
        raise MegasimError("give --layer or --shape, not both")
    return parse_shape(shape) if shape else load_layer(name or default)


def network_names(root: Path = SCENARIOS) -> list[str]:
    return list(_names(root / "networks"))


def load_network(name: str, root: Path = SCENARIOS) -> list[tuple[Layer, int]]:
    """The 3x3 stride-1 convolutions of network `name`, as (layer, occurrences)."""
    from megasim.app.network_spec import load_network_spec
    return [(entry.layer, entry.count) for entry in load_network_spec(name, root).layers]


def partition_for(layer: Layer, gpu: str = "h200", overrides: str | None = None,
                  root: Path = SCENARIOS) -> Partition:
    """The partition the kernels use for `layer` on `gpu` (scenarios/partitions/<gpu>.toml).

    A GPU without a table gets `Partition()`'s defaults; a table holding only
    `same_as = "<gpu>"` is that GPU's. `overrides` is the CLI's "name=int,..."
    and applies on top.
    """
    fields, path, _, _ = _table(layer, gpu, root)
    part = _partition(fields, str(path))
    return apply_overrides(part, overrides) if overrides else part


def partition_and_source(layer: Layer, gpu: str = "h200", overrides: str | None = None,
                         root: Path = SCENARIOS) -> tuple[Partition, str]:
    """`partition_for`'s partition and where it came from, in words `simulate` prints: the table file and
    its row or default, or `Partition()`'s defaults, then any `--partition`.

    A table row is found by the layer's name, never by its shape: `--shape` of a named layer keeps the
    table's default (the committed predictions of custom shapes stay as they are), and the source then
    names the layer whose row `--layer` would get.
    """
    fields, path, source, rows = _table(layer, gpu, root)
    if rows and layer.name not in rows:
        source += _same_shape_note(layer, rows, root)
    part = _partition(fields, str(path))
    if overrides:
        return apply_overrides(part, overrides), f"{source}, then --partition {overrides}"
    return part, source


def shown_path(path) -> str:
    """A path as the CLI prints it: relative to the checkout when it is megasim's own data, else as given."""
    real, checkout = Path(path).resolve(), SCENARIOS.parent.resolve()
    return str(real.relative_to(checkout)) if checkout in real.parents else str(path)


def _table(layer: Layer, gpu: str, root: Path) -> tuple[dict, Path, str, dict]:
    """(fields, the table read, where the fields came from, the table's [layers] rows)."""
    path = root / "partitions" / f"{gpu.lower()}.toml"
    fields = Partition().to_dict()
    if not path.exists():
        portable = root / "partitions" / "portable.toml"
        if gpu.lower() in gpu_names(root) or not portable.exists():
            return fields, path, f"Partition() defaults (no {shown_path(path)})", {}
        path = portable  # a GPU megasim has no spec of: the portable table, whose GEMM tasks the warp body tiles
    data = read_toml(path)
    via = ""
    if "same_as" in data:
        via = f" (same_as in {shown_path(path)})"
        path = root / "partitions" / f"{str(data['same_as']).lower()}.toml"
        data = read_toml(path)
    section = "default_small_k" if layer.k < 64 else "default"
    rows = data.get("layers", {})
    fields.update(data.get(section, {}))
    fields.update(rows.get(layer.name, {}))
    where = f'[layers] "{layer.name}" over [{section}]' if layer.name in rows else f"[{section}]"
    return fields, path, f"{shown_path(path)}{via} {where}", rows


def _same_shape_note(layer: Layer, rows: dict, root: Path) -> str:
    shape = tuple(getattr(layer, f) for f in _SHAPE)
    for name in rows:
        try:
            named = load_layer(name, root)
        except MegasimError:
            continue
        if tuple(getattr(named, f) for f in _SHAPE) == shape:
            return f"; this is {named.name}'s shape, whose row --layer {named.name} gets"
    return ""


def _partition(fields: dict, origin: str) -> Partition:
    try:
        return Partition.from_dict(fields)
    except TypeError as exc:
        raise MegasimError(f"{origin}: {exc}") from None


def apply_overrides(part: Partition, text: str) -> Partition:
    """`--partition tiles_per_group=64,gemm_k_per_task=32` on top of `part`."""
    fields, given = part.to_dict(), set()
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not value.strip().lstrip("-").isdigit():
            raise MegasimError(f"--partition wants name=integer pairs separated by commas, got {item!r}")
        if len(value.strip().lstrip("-")) > 18:
            raise MegasimError(f"--partition {key.strip()}: {value.strip()[:12]}... is far beyond any partition")
        if key.strip() in given:
            raise MegasimError(f"--partition {text}: {key.strip()} given twice; give it once")
        given.add(key.strip())
        fields[key.strip()] = int(value)
    return _partition(fields, "--partition")


def gpu_names(root: Path = SCENARIOS) -> list[str]:
    return sorted(p.stem for p in (root / "gpus").glob("*.toml"))


def is_spec_file(name: str) -> bool:
    """Whether `--gpu NAME` is a path to a spec file of one's own (it ends in .toml) rather than a GPU of
    scenarios/gpus: a spec file never takes a committed calibration, whatever its file is called."""
    return Path(name).suffix == ".toml"


def gpu_path(name: str, root: Path = SCENARIOS) -> Path:
    """The spec file `--gpu NAME` reads: the path given, else scenarios/gpus/<name>.toml (any case)."""
    if is_spec_file(name):
        return Path(name)
    path = root / "gpus" / f"{name.lower()}.toml"
    if not path.exists():
        raise MegasimError(f"unknown GPU {name!r}; known: {', '.join(gpu_names(root))}")
    return path


def load_gpu(name: str, root: Path = SCENARIOS) -> GPUModel:
    """Load scenarios/gpus/<name>.toml (case-insensitive name) or a path to a TOML file: its hardware and its
    uncalibrated model."""
    path = gpu_path(name, root)
    spec, model = spec_from_dict(read_toml(path), path.stem, str(path))
    return GPUModel.of(spec, model_from_table(model, str(path)))
