"""Whether the engine's hot modules run compiled, and the pure-Python fallback where they should not.

`clock`, `psqueue`, `weighted_psqueue`, `neighbours`, `l2` and `core` are plain Python, and each has a `.pxd` beside it that types its classes
and hot locals for Cython (pure Python mode). Where the package was built with Cython (`setup.py`: `pip install
-e .` does it when Cython and a C compiler are there), an extension module sits beside each `.py`, and Python
imports it first. Both are the same source and give bit-identical results (docs/performance.md, "Simulator
speed"); compiled, the engine is about twice as fast.

An in-place build leaves a stamp, the digest of the sources it compiled. The `.py` files are imported instead
of the extensions when the stamp does not match the sources (they were edited since the build: rebuild with
`pip install -e .` to compile them again) or when `MEGASIM_PURE_PYTHON` is set (which also makes `setup.py`
skip compiling). No stamp (an installed wheel): the extensions are used.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import warnings
import zlib
from pathlib import Path

HOT = ("clock", "psqueue", "weighted_psqueue", "neighbours", "l2", "core")  # in import order: each imports only those before it
STAMP = "compiled.stamp"
HERE = Path(__file__).resolve().parent


def source_digest(folder: Path = HERE) -> str:
    """A checksum of the hot modules' `.py` and `.pxd` files in `folder` (CRC-32: it tells an edit from none,
    and zlib is loaded already, where hashlib would cost a few ms of every start-up)."""
    crc = 0
    for name in HOT:
        for suffix in (".py", ".pxd"):
            path = folder / (name + suffix)
            crc = zlib.crc32(path.read_bytes() if path.exists() else b"", crc)
            crc = zlib.crc32(b"\0", crc)
    return f"{crc:08x}"


def _stale() -> bool:
    stamp = HERE / STAMP
    return stamp.exists() and stamp.read_text().strip() != source_digest()


def load() -> bool:
    """Before the engine imports its hot modules: import the `.py` files where the extensions must not be
    used. Returns whether the engine runs compiled."""
    stale = _stale()
    if stale:
        warnings.warn("megasim: the engine's hot modules changed since they were compiled; running them as pure "
                      "Python (`pip install -e .` compiles them again)", stacklevel=2)
    if stale or os.environ.get("MEGASIM_PURE_PYTHON"):
        for name in HOT:
            full = f"{__package__}.{name}"
            if full not in sys.modules:
                spec = importlib.util.spec_from_file_location(full, HERE / f"{name}.py")
                module = sys.modules[full] = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
    core = sys.modules.get(f"{__package__}.core") or importlib.import_module(f"{__package__}.core")
    return not core.__file__.endswith(".py")

