"""Which build of the convolution kernels this checkout holds: a hash of their sources.

It lives apart from megasim.gpu.backend so that `megasim simulate` can tell
whether its calibrated profile still describes these kernels without loading
CuPy (seconds where it is installed) or NumPy.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

KERNEL_DIR = Path(__file__).parent / "kernels"


def kernel_build_hash(folder: Path = KERNEL_DIR) -> str:
    """sha256 over the convolution kernels' sources (names and contents, sorted), first 12 hex digits.

    A profile fitted on one build of the kernels says little about another, so measurements and
    profiles carry this hash and predictions under a stale profile are flagged. The microbenchmark
    sources and the non-fused trace kernels (compiled into no timed build) are not part of the build
    a profile describes.
    """
    h = hashlib.sha256()
    for path in sorted(p for p in folder.glob("*.cu*") if not p.name.startswith(("microbench", "trace_"))):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]
