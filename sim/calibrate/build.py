"""Which kernel build a measurement or profile belongs to.

A profile fitted on one build of the CUDA kernels says little about another
(vidur's users were bitten by exactly this), so measurements and profiles
carry a hash of the kernel sources and predictions under a stale profile are
flagged.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "gpu" / "kernels"


def kernel_build_hash(folder: Path = KERNELS) -> str:
    """sha256 over the convolution kernels' sources (names and contents, sorted), first 12 hex digits.

    The microbenchmark sources are not part of the build the profile describes.
    """
    h = hashlib.sha256()
    for path in sorted(p for p in folder.glob("*.cu*") if not p.name.startswith("microbench")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]
