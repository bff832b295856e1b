"""`Conv2d`: a `torch.nn.Conv2d` whose eligible calls run on the fused Winograd megakernel.

It takes every argument `nn.Conv2d` takes, plus `schedules` (where each input
shape's schedule comes from; `Schedules()` by default: the disk cache, else a
small simulator search). A call runs on the megakernel when the layer is
3x3, stride 1, padding 1, dilation 1, one group, zero padding, and the call
brings a float32 batch on a CUDA device; bias is added after, as a torch op.
Anything else is torch's own convolution, with one warning per layer saying
why: at construction for what the layer's hyper-parameters decide, at the
first such call for what the call brings, or when no schedule could be made
for a shape (an unknown GPU, no legal partition).

The [K][3][3][C] copy of the filters the kernels read is kept and remade
when the weight changes (its version counter or address); under
`torch.compile` and CUDA graph capture it is recomputed in the graph, so a
replay reads the current weights. For a non-fused build, an eager call also
keeps the filters' Winograd transform U (alpha^2 * C * K floats, 16 or 36
per filter pair: 37.7 MB for a 512-channel F(4x4) layer), remade with the
copy, so it launches three kernels, not four.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn

from megasim.app.torch import eager, plans
from megasim.app.torch.eligibility import runtime_reason, static_reason
from megasim.app.torch.ops import WinogradConv3x3, krsc, run_on_device
from megasim.app.torch.schedules import Schedules
from megasim.contract.errors import MegasimError


class FallbackWarning(UserWarning):
    """A megasim Conv2d runs torch's convolution instead of the megakernel (the message says why)."""


warnings.filterwarnings("always", category=FallbackWarning)  # each layer warns once itself: never hide one


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def device_index(t: torch.Tensor) -> int:
    """The CUDA device a tensor is on (-1 for the CPU)."""
    if not t.is_cuda:
        return -1
    return t.device.index if t.device.index is not None else torch.cuda.current_device()


def _capturing(t: torch.Tensor) -> bool:
    """Whether a CUDA graph is being captured on the current stream (never asked of CPU tensors)."""
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def eager_key(x: torch.Tensor) -> tuple:
    """What an eager call's choice depends on: shape, dtype, device, and whether x is plain NCHW."""
    return x.shape, x.dtype, x.get_device(), x.is_contiguous()


class Conv2d(nn.Conv2d):
    def __init__(self, *args, schedules: Schedules | None = None, name: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.schedules = schedules or Schedules()
        self.megasim_name = name
        self._schedules_key = plans.register(self.schedules)
        self._static_reason = static_reason(self.kernel_size, self.stride, self.padding, self.dilation, self.groups,
                                            self.padding_mode, self.transposed)
        self._fallback_reason: str | None = None
        self._warned = False
        self._krsc, self._krsc_key = None, None
        self.shape_plans: dict = {}  # input shape -> its plan (what runs, and why: plan.schedule)
        self.settled: dict | None = None  # what `settle` measured of the forward this layer is in
        self.plain = False  # `settle` handed the layer back to torch: every call is nn.Conv2d's, no dispatch
        self._eager: dict = {}  # (shape, dtype, device, NCHW?) -> the plan an eager call runs, None for torch's
        self._transformed: dict = {}  # plan -> (filters, their Winograd transform U): non-fused builds
        if self._static_reason:
            self._warn(self._static_reason)

    def _describe(self) -> str:
        name = f"{self.megasim_name}: " if self.megasim_name else ""
        return f"{name}Conv2d({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size})"

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"megasim.torch {self._describe()} runs torch's convolution: {why}", FallbackWarning,
                          stacklevel=3)

    def megakernel_reason(self, x: torch.Tensor) -> str | None:
        """Why a call with `x` would not run on the megakernel, or None."""
        if self._static_reason or self._fallback_reason:
            return self._static_reason or self._fallback_reason
        return runtime_reason(x.dim(), x.device.type, _dtype(x), self.weight.device.type, _dtype(self.weight))

    def _filters(self) -> torch.Tensor:
        w = self.weight
        if torch.compiler.is_compiling() or _capturing(w):
            return krsc(w)
        key = (w.data_ptr(), w._version)  # addresses are unique across devices (unified addressing)
        if key != self._krsc_key:
            self._krsc, self._krsc_key = krsc(w), key
        return self._krsc

    def _ensure_plan(self, x: torch.Tensor) -> bool:
        """Outside compilation, make (or find) the shape's plan now, so a failure falls back here, not
        inside a compiled graph; False, with one warning, if it cannot be made, and False, silently, where
        the schedule chose torch's convolution (a decision, not a fallback)."""
        if torch.compiler.is_compiling():
            return True
        n, c, h, w = x.shape
        try:
            plan = plans.plan_for(self._schedules_key, (n, c, h, w, self.out_channels), device_index(x),
                                  _capturing(x))
        except MegasimError as exc:
            self._fallback_reason = f"no megakernel plan for input {tuple(x.shape)}: {exc}"
            self._warn(self._fallback_reason)
            return False
        self.shape_plans[tuple(x.shape)] = plan
        return not plan.runs_torch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.plain:
            return self._conv_forward(x, self.weight, self.bias)  # nn.Conv2d.forward's own call
        records = torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad)
        if records or torch.compiler.is_compiling():
            return self._forward_op(x)
        at = eager_key(x)
        plan = self._eager.get(at, False)
        if plan is False or (plan is not None and plan.released):
            self._transformed = {k: v for k, v in self._transformed.items() if not k.released}
            plan = self._eager_plan(x, at)
        if plan is None:
            return self._conv_forward(x, self.weight, self.bias)  # nn.Conv2d.forward, one frame fewer
        return self._run_build(plan, x)

    def _run_build(self, plan, x: torch.Tensor) -> torch.Tensor:
        y = run_on_device(plan, x, self._filters(), self._transformed)
        bias = self.bias
        return y if bias is None else y.add_(bias.view(1, -1, 1, 1))

    def _eager_plan(self, x: torch.Tensor, at: tuple):
        """The plan eager calls like `x` run, or None where they run torch's convolution; remembered for
        the next call (until `release` retires the plan). Where the schedule leaves the choice to
        measurement (backend "auto"), the build and torch's convolution are raced as eager calls once per
        plan and layout (`eager.race`), except during a CUDA graph capture, which cannot wait."""
        why = self.megakernel_reason(x)
        if why is not None:
            self._warn(why)
            plan = None
        elif not self._ensure_plan(x):
            plan = None
        else:
            plan = self.shape_plans[tuple(x.shape)]
            if self.schedules.backend == "auto" and not _capturing(x):
                verdict = eager.race(plan, x, lambda: self._run_build(plan, x), lambda: super(Conv2d, self).forward(x))
                plan = None if verdict.runs_torch else plan
        self._eager[at] = plan
        return plan

    def _forward_op(self, x: torch.Tensor) -> torch.Tensor:
        """Through the custom op and autograd: what `torch.compile` traces and training records."""
        why = self.megakernel_reason(x)
        if why is None and self._ensure_plan(x):
            y = WinogradConv3x3.apply(x, self.weight, self._filters(), self._schedules_key)
            return y if self.bias is None else y + self.bias.view(1, -1, 1, 1)
        if why is not None:
            self._warn(why)
        return super().forward(x)

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", megakernel: no ({self._static_reason})" if self._static_reason
                                       else ", megakernel: yes")

    @classmethod
    def from_conv(cls, conv: nn.Conv2d, schedules: Schedules | None = None, name: str | None = None) -> Conv2d:
        """A megasim Conv2d with `conv`'s hyper-parameters and its very Parameter objects (optimisers and
        state_dict keys carry over); no memory is allocated for new weights."""
        new = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                  conv.groups, conv.bias is not None, conv.padding_mode, device="meta", dtype=conv.weight.dtype,
                  schedules=schedules, name=name)
        new.weight = conv.weight
        new.bias = conv.bias
        new.train(conv.training)
        return new


__all__ = ["Conv2d", "FallbackWarning"]
