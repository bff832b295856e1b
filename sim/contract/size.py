"""How big a graph and its simulation will be, known before either is built.

The task count follows from the layer, variant and partition by arithmetic
(`Geometry`), so a shape that cannot fit is refused in microseconds with the
estimate, instead of after a minute of allocation and swapping (a shape of
64,128,100000,100000,128 once grew to 17 GB in 60 s before anyone noticed).

`BYTES_PER_TASK` is measured: the peak resident memory of `build_graph` plus
`simulate` (the fused run and the four non-fused kernels, records and all),
divided by the task count, on layers of 10k to 250k tasks. It came to about
1.6-2.2 KB per task for the H200 partitions (VGG-1: 1.9 KB, a 250,896-task
layer: 1.9 KB) and up to 5.1 KB where input transforms read many small
patches (input_channels_per_task=1). The estimate takes the high figure, so
it refuses only what would not fit. Simulation runs at about 15,000 tasks a
second, so the largest graph that fits a 24 GB machine takes some minutes.

The data buffers (x, U, V, M, y) are also bounded: the simulator never
allocates them, but their byte counts are int64 arithmetic, and a layer whose
buffers pass a tebibyte is no workload a GPU runs.
"""
from __future__ import annotations

import os
from math import prod

from megasim.contract.errors import MegasimError
from megasim.contract.problem import FLOAT_BYTES

BYTES_PER_TASK = 5_000
MAX_BUFFER_BYTES = 2**40


def available_memory_bytes() -> int | None:
    """Memory this process could still take: Linux's MemAvailable, within a cgroup limit if one is set."""
    found = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        with open("/sys/fs/cgroup/memory.current") as fh:
            used = int(fh.read().strip())
        if limit != "max":
            found.append(int(limit) - used)
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def _human(n: float) -> str:
    """Decimal units, three figures: 1.25e10 -> '12.5 GB'."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"


def check_size(ranges, num_tasks: int, available: int | None = None) -> int:
    """The estimated bytes of graph plus simulation; refuse (one MegasimError with the estimate) what cannot fit."""
    layer = ranges.layer
    need = num_tasks * BYTES_PER_TASK
    available = available_memory_bytes() if available is None else available
    if available is not None and need > available:
        raise MegasimError(f"layer {layer.name} ({layer.shape()}) is {num_tasks:,} thread-block tasks; building and "
                           f"simulating it needs about {_human(need)} ({BYTES_PER_TASK:,} B per task), but only "
                           f"{_human(available)} of memory is available")
    for buffer, shape in ranges.shapes().items():
        size = prod(shape) * FLOAT_BYTES
        if size > MAX_BUFFER_BYTES:
            raise MegasimError(f"layer {layer.name} ({layer.shape()}): buffer {buffer} alone would be {_human(size)}, "
                               f"past the {_human(MAX_BUFFER_BYTES)} limit of the model")
    return need
