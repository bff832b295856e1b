"""How big a graph and its simulation will be, and how long it will run, known before either is built.

The task count, the access lists and the regions follow from the layer,
variant and partition by arithmetic (`estimate`), so a shape that cannot fit
is refused in microseconds with the estimate, instead of after a minute of
allocation and swapping (a shape of 64,128,100000,100000,128 once grew to
17 GB in 60 s before anyone noticed).

Memory is the larger of two figures:

- `BYTES_PER_TASK` is measured: the peak resident memory of `build_graph`
  plus `simulate` (the fused run and the four non-fused kernels, records and
  all), divided by the task count, on layers of 10k to 250k tasks. It came to
  about 1.6-2.2 KB per task for the H200 partitions (VGG-1: 1.9 KB, a
  250,896-task layer: 1.9 KB) and up to 5.1 KB where input transforms read
  many small patches (input_channels_per_task=1). The estimate takes the high
  figure, so it refuses only what would not fit.
- The access lists (`megasim.contract.regions`) do not grow with tasks alone:
  a GEMM task reads one V region per input-channel block, so a layer of wide
  C and K has C x K terms (64,65536,28,28,65536 is 2 million tasks but 3.7
  billion GEMM reads; one of its arrays alone was 27.6 GiB). `estimate`
  counts every access, region and block-overlap cell. Building the lists
  peaked at 48-52 B per access (NumPy temporaries of the concatenation; a
  C=4096 layer of 15.2 million accesses: 797 MB, a C=2048 one with
  input_channels_per_task=1 of 12.0 million: 577 MB), hence
  `BYTES_PER_ACCESS`; the engine's L2 keeps 17 B per region.

Time: a whole `simulate` (graph, fused run, non-fused kernels) ran at about
`TASKS_PER_SECOND` (a 1,003,536-task VGG-1 of N=1024: 34.7 s on a 2-core
container, 29,000 tasks/s; VGG-1 itself: 62,736 tasks, 1.9 s), plus
`ACCESSES_PER_SECOND` where tasks read many regions (the two layers above
took 3.2 and 4.4 s beyond their tasks' share). A graph whose estimate passes
`MAX_SIM_SECONDS`, thirty times VGG-1, the largest paper layer, is refused
with the estimate rather than left to run for minutes with no output (an
N=4096 VGG-1 estimates 146 s). The environment variable
MEGASIM_MAX_SIM_SECONDS sets another limit, 0 none, for a run meant to be
that long; memory has no such override.

The data buffers (x, U, V, M, y) are also bounded: the simulator never
allocates them, but their byte counts are int64 arithmetic, and a layer whose
buffers pass a tebibyte is no workload a GPU runs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from math import lcm, prod

from megasim.contract.errors import MegasimError
from megasim.contract.problem import FLOAT_BYTES
from megasim.contract.regions import INPUT_CHUNK_TILES

BYTES_PER_TASK = 5_000
BYTES_PER_ACCESS = 56
BYTES_PER_REGION = 24
BYTES_PER_OVERLAP_CELL = 32
BUILD_BYTES_PER_TASK = 200
INDEX_BYTES = 8
TASKS_PER_SECOND = 30_000
ACCESSES_PER_SECOND = 3_500_000
MAX_SIM_SECONDS = 60.0
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


def max_sim_seconds() -> float:
    """MAX_SIM_SECONDS, or MEGASIM_MAX_SIM_SECONDS where set (0: no limit)."""
    raw = os.environ.get("MEGASIM_MAX_SIM_SECONDS")
    if raw is None or not raw.strip():
        return MAX_SIM_SECONDS
    try:
        limit = float(raw)
    except ValueError:
        limit = -1.0
    if not limit >= 0 or limit == float("inf"):
        raise MegasimError(f"MEGASIM_MAX_SIM_SECONDS must be a number of seconds >= 0 (0: no limit), got {raw!r}")
    return limit or float("inf")


def _human(n: float) -> str:
    """Decimal units, three figures: 1.25e10 -> '12.5 GB'."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"


def _count(n: float) -> str:
    """Three figures in words past a million: 3.7e9 -> '3.7 billion'."""
    for value, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if n >= value:
            return f"{n / value:.3g} {word}"
    return f"{int(n):,}"


def _pieces(a, b) -> int:
    """Non-zero cells of `a.overlap(b)` for two cuts of one axis: one more than their distinct inner cuts."""
    inner = a.total - 1
    return 1 + inner // a.size + inner // b.size - inner // lcm(a.size, b.size)


def _starts(total: int, a: int, b: int) -> int:
    """How many of 0..total-1 are a multiple of a or of b."""
    return -(-total // a) + -(-total // b) - -(-total // lcm(a, b))


@dataclass(frozen=True)
class Estimate:
    """Counts of what `build_graph` and the engine allocate, from the ranges alone.

    `arrays` holds the elements of the largest single index arrays (INDEX_BYTES each), so a refusal can say
    which one would not fit. The input-transform reads are an upper bound (every group is charged the
    bands and chunks of its worst case); every other count is exact.
    """

    tasks: int
    accesses: int
    regions: int
    overlap_cells: int
    tiles: int
    arrays: dict

    @property
    def bytes(self) -> int:
        """The larger of the per-task figure and the peak of building the access lists."""
        build = (self.tasks * BUILD_BYTES_PER_TASK + self.accesses * BYTES_PER_ACCESS
                 + self.regions * BYTES_PER_REGION + self.overlap_cells * BYTES_PER_OVERLAP_CELL + self.tiles)
        return max(self.tasks * BYTES_PER_TASK, build)

    @property
    def largest(self) -> tuple[str, int]:
        name = max(self.arrays, key=self.arrays.get)
        return name, self.arrays[name] * INDEX_BYTES

    @property
    def seconds(self) -> float:
        return self.tasks / TASKS_PER_SECOND + self.accesses / ACCESSES_PER_SECOND


def _input_keys(r, th: int, tw: int) -> tuple[int, int]:
    """(pieces, regions) of input the input transforms of all groups read, per channel block: the pieces
    before a group's halo rows merge (`regions._input_footprints` holds them all at once), and the
    regions after, bounded per group by the tile rows it spans plus two halo bands per image it enters,
    times the chunks of a row it can reach."""
    total, per_group = r.tiles.total, r.tiles.size
    runs = _starts(total, per_group, tw)
    pieces = min(3, th) * (total // INPUT_CHUNK_TILES + 2 * runs)
    rows = min(per_group // tw + 2, r.layer.n * th)
    images = min(per_group // (th * tw) + 2, r.layer.n)
    chunks = min(-(-tw // INPUT_CHUNK_TILES), per_group // INPUT_CHUNK_TILES + 2)
    return pieces, min(pieces, r.tiles.count * (rows + 2 * images) * chunks)


def estimate(ranges) -> Estimate:
    """What the graph of `ranges` will hold, by arithmetic: nothing here allocates per task."""
    r, layer = ranges, ranges.layer
    th, tw = r.variant.tiles(layer)
    ng, si, so, nf = r.tiles.count, r.input_c.count, r.output_k.count, r.filter_k.count
    neb, nkb = r.points.count, r.gemm_k.count
    n_gemm = ng * neb * nkb
    pieces, keys = _input_keys(r, th, tw)
    reads = nf + keys * si + n_gemm * (si + 1) + ng * _pieces(r.output_k, r.gemm_k) * neb
    writes = _pieces(r.filter_k, r.gemm_k) * neb + ng * si * neb + n_gemm + ng * so
    regions = layer.n * th * -(-tw // INPUT_CHUNK_TILES) * si + nf + neb * nkb + ng * neb * si + n_gemm + ng * so
    arrays = {"the GEMM reads": n_gemm * (si + 1), "the input-transform reads": keys * si,
              "the pieces of input": pieces, "the regions": regions,
              "the filter-by-GEMM block overlap": nf * nkb, "the output-by-GEMM block overlap": so * nkb}
    return Estimate(tasks=nf + ng * (si + neb * nkb + so), accesses=reads + writes, regions=regions,
                    overlap_cells=(nf + so) * nkb, tiles=r.tiles.total, arrays=arrays)


def check_size(ranges, num_tasks: int, available: int | None = None) -> int:
    """The estimated bytes of graph plus simulation; refuse (one MegasimError with the estimate) what cannot
    fit in memory or would simulate past `max_sim_seconds()`. The task count is checked first, then the
    buffers, then what the access lists add, then the time."""
    layer = ranges.layer
    available = available_memory_bytes() if available is None else available
    need = num_tasks * BYTES_PER_TASK
    if available is not None and need > available:
        raise MegasimError(f"layer {layer.name} ({layer.shape()}) is {num_tasks:,} thread-block tasks; building and "
                           f"simulating it needs about {_human(need)} ({BYTES_PER_TASK:,} B per task), but only "
                           f"{_human(available)} of memory is available")
    for buffer, shape in ranges.shapes().items():
        size = prod(shape) * FLOAT_BYTES
        if size > MAX_BUFFER_BYTES:
            raise MegasimError(f"layer {layer.name} ({layer.shape()}): buffer {buffer} alone would be {_human(size)}, "
                               f"past the {_human(MAX_BUFFER_BYTES)} limit of the model")
    est = estimate(ranges)
    need = max(need, est.bytes)
    if available is not None and need > available:
        what, largest = est.largest
        raise MegasimError(f"layer {layer.name} ({layer.shape()}) is {num_tasks:,} thread-block tasks with "
                           f"{_count(est.accesses)} L2 accesses over {_count(est.regions)} regions; building them "
                           f"needs about {_human(need)} ({what} alone {_human(largest)}), but only "
                           f"{_human(available)} of memory is available")
    limit = max_sim_seconds()
    if est.seconds > limit:
        raise MegasimError(f"layer {layer.name} ({layer.shape()}) is {num_tasks:,} thread-block tasks with "
                           f"{_count(est.accesses)} L2 accesses; simulating it would take about {est.seconds:,.0f} s "
                           f"(~{TASKS_PER_SECOND:,} tasks/s), past the {limit:g} s limit "
                           f"(MEGASIM_MAX_SIM_SECONDS sets another; 0 lifts it)")
    return need
