"""Which side an eager call runs: megasim's build or torch's convolution, timed as eager calls are.

A schedule's choice (`Schedules.decide`) compares GPU times: the simulator's
prediction of the build against torch's convolution measured alone. That is
the whole story under a CUDA graph or `torch.compile`, where no Python runs
per layer. An eager call costs the larger of its host time and its GPU time,
and at batch 1 the host time wins: a non-fused build issues four launches of
about 5 us each, an NCHW input adds two layout copies, and torch's cuDNN call
costs about 18 us of host time in all (H200, 2026-11-29,
docs/results/torch_h200/host_time.md). So a layer that is faster on the GPU
can be slower eager.

`race(plan, x, ours, theirs)` settles it once per plan and input layout: both
calls run back to back `CALLS` times after a warm-up, with one
synchronisation at the end, and the wall time per call (the larger of host
and GPU time, as the layer alone sees it) decides. The host time per call
(until the last call returns) is kept too: inside a host-bound network a
layer's GPU time hides behind the next layers' host time, and `settle`
tries the choice of the cheaper host side as well. The verdict is kept on
the plan, so every layer of that shape and layout shares it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from megasim.app.torch.ops import is_channels_last

CALLS = 20
WARMUP = 3


@dataclass(frozen=True)
class Verdict:
    """The eager race of one plan and input layout."""

    layout: str
    megasim_us: float
    torch_us: float
    megasim_host_us: float = float("nan")
    torch_host_us: float = float("nan")

    @property
    def runs_torch(self) -> bool:
        return self.torch_us < self.megasim_us

    @property
    def torch_host_cheaper(self) -> bool:
        return self.torch_host_us < self.megasim_host_us

    def describe(self) -> str:
        side = "torch's convolution" if self.runs_torch else "the build"
        return (f"eager {self.layout}: {side} (per call, back to back: megasim {self.megasim_us:.1f} us, "
                f"torch {self.torch_us:.1f} us; host megasim {self.megasim_host_us:.1f} us, torch "
                f"{self.torch_host_us:.1f} us)")


def layout_of(x: torch.Tensor) -> str:
    return "channels_last" if is_channels_last(x) else "nchw"


def wall_us(call, calls: int = CALLS, sync=None) -> tuple[float, float]:
    """(wall, host) time per call of `calls` back-to-back calls, synchronised once at the end, after a
    warm-up; host is until the last call returns."""
    sync = sync or torch.cuda.synchronize
    for _ in range(WARMUP):
        call()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    issued = time.perf_counter()
    sync()
    return (time.perf_counter() - start) / calls * 1e6, (issued - start) / calls * 1e6


def race(plan, x: torch.Tensor, ours, theirs, sync=None) -> Verdict:
    """Time `ours()` and `theirs()` (each an eager call on `x`) and keep the verdict on `plan`."""
    layout = layout_of(x)
    verdict = plan.eager.get(layout)
    if verdict is None:
        (mine, mine_host), (other, other_host) = wall_us(ours, sync=sync), wall_us(theirs, sync=sync)
        verdict = plan.eager[layout] = Verdict(layout, mine, other, mine_host, other_host)
    return verdict


__all__ = ["Verdict", "race", "layout_of", "wall_us", "CALLS"]
