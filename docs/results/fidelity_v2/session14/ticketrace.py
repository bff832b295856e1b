"""Study patch: in the megakernel the first wave's tickets race (session 14, item 5). Every resident block of the first
wave starts within 0.2 us and takes its ticket by an atomic, so the logical order of the first wave is the order the
atomics arrive, not the dispatcher's round robin over SMs. Each SM's arrival is offset by U(0, 1) and each of its
blocks by MIX x U(0, 1) more; tickets go in arrival order (MIX = 0: an SM's blocks take consecutive tickets; large:
a random permutation of the slots). Only the slots the launch fills race: a launch of fewer blocks than slots
fills the dispatcher's round robin first, as the hardware does (a 110-block launch runs on 110 SMs). Static launches
only: the persistent and ready-queue launches' first 132 tickets land on 81-110 SMs, near the round robin's 132,
where the static launches' land on 36-66 (the H200 sample)."""
from collections import deque

import numpy as np
import megasim.engine.core as core

from fusedrun import fused, track

_RUN = {}


def race(slots, mix: float, rng) -> list:
    sms = np.asarray(slots)
    offset = rng.random(int(sms.max()) + 1)
    return sms[np.argsort(offset[sms] + mix * rng.random(len(sms)), kind="stable")].tolist()


def install(mix: float, seed: int = 0) -> None:
    track()
    make, run_scale = core.make_policy, core.run_scale

    def noted(kernels, gpu, s, *rest):
        mega = [k for k in kernels if k.check_deps]
        _RUN["filled"] = None if not mega or mega[0].persistent or mega[0].ready else len(mega[0].tasks)
        return run_scale(kernels, gpu, s, *rest)

    def raced(name, gpu, slots, options=None):
        policy = make(name, gpu, slots, options)
        if fused() and _RUN.get("filled") and hasattr(policy, "free"):
            free = list(policy.free)
            n = min(_RUN["filled"], len(free))
            if n > gpu.sm_count:
                policy.free = deque(race(free[:n], mix, np.random.default_rng(seed)) + free[n:])
        return policy
    core.run_scale, core.make_policy = noted, raced
