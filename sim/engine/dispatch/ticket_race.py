"""The megakernel's first-wave ticket race (`GPUSpec.ticket_race`), applied to any policy with a free-slot FIFO.

Every block of a static megakernel's first wave is resident within a fraction of a microsecond and takes its
logical task by an atomic ticket, so the first wave's tasks go to its slots in the order their atomics arrive,
not in the dispatcher's round robin. Per-block traces on the H200 show the first 132 tickets landing on only
36-66 SMs (docs/calibration-analysis.md, session 14): the atomics arrive clustered by SM. Each SM's arrival is
drawn at U(0, 1) and each of its blocks `mix` x U(0, 1) later; the first wave's slots are taken in that order.
Only the slots the launch fills race (a launch of fewer blocks than SMs runs one per SM, as measured), and only
static launches: persistent and ready-queue launches land their first 132 tickets on 81-110 SMs.
"""
from __future__ import annotations

from collections import deque

import numpy as np


def race_first_wave(policy, kernel, gpu, seed: int) -> None:
    """For a static megakernel `kernel` on a `gpu` with a `ticket_race`: reorder `policy.free`'s first slots, as
    many as the launch fills, by a drawn arrival (if it fills more than one per SM)."""
    free = getattr(policy, "free", None)
    if not gpu.ticket_race or free is None or not kernel.check_deps or kernel.persistent or kernel.ready:
        return
    n = min(len(kernel.tasks), len(free))
    if n <= gpu.sm_count:
        return
    mix = gpu.ticket_race
    slots = list(free)
    head = np.asarray(slots[:n])
    rng = np.random.default_rng(seed)
    offset = rng.random(int(head.max()) + 1)
    order = head[np.argsort(offset[head] + mix * rng.random(n), kind="stable")]
    policy.free = deque(order.tolist() + slots[n:])
