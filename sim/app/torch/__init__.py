"""PyTorch drop-in: 3x3 stride-1 convolutions on the fused Winograd megakernel.

    import megasim.torch as mtorch
    report = mtorch.convert(model)   # every eligible nn.Conv2d becomes an mtorch.Conv2d, in place
    print(report)                    # what was swapped, and why the rest was not
    y = model(x)                     # each new input shape gets a schedule first (cached on disk)

`Conv2d` (a `torch.nn.Conv2d`) runs eligible calls through the custom op
`torch.ops.megasim.winograd_conv3x3` and everything else through torch
(`conv`); `convert` swaps layers (`convert`); `Schedules` says where each
shape's schedule comes from: mapping files, the disk cache, or a simulator
search (`schedules`); `prepare` makes the schedules and compiles the kernels
of a whole model in parallel (`prepare`); `settle` times the whole forward with
the layers' eager choices, on their cheaper host sides and as torch's own
network, and keeps the fastest (`settle`). `release` frees the compiled plans' device memory.

This package imports without torch, CuPy or a GPU: `Schedules` and the
eligibility rules work anywhere. The names that need torch load on first
use and say what is missing in one line (`TorchMissing`, an ImportError and
a MegasimError). It lives in the application layer because it uses both
the GPU executor and the simulator's search; `megasim.torch` is its public
name (docs/architecture.md).
"""
from __future__ import annotations

from megasim.app.torch.eligibility import runtime_reason, static_reason
from megasim.app.torch.schedules import Schedule, Schedules, ScheduleWarning
from megasim.contract.errors import MegasimError

NEEDS_TORCH = {"Conv2d": "conv", "FallbackWarning": "conv", "convert": "convert", "ConvertReport": "convert",
               "prepare": "prepare", "settle": "settle", "winograd_conv3x3": "ops", "WinogradConv3x3": "ops"}


class TorchMissing(MegasimError, ImportError):
    """megasim.torch was used without PyTorch."""


def _require_torch() -> None:
    try:
        import torch
    except ImportError:
        raise TorchMissing("megasim.torch needs PyTorch >= 2.4 (pip install torch); running the megakernel "
                           "also needs CuPy (pip install cupy-cuda12x) and an NVIDIA GPU") from None
    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        raise TorchMissing(f"megasim.torch needs PyTorch >= 2.4 (torch.library.custom_op); this is {torch.__version__}")


def __getattr__(name: str):
    if name not in NEEDS_TORCH:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _require_torch()
    import importlib
    return getattr(importlib.import_module(f"megasim.app.torch.{NEEDS_TORCH[name]}"), name)


def release() -> None:
    """Drop every compiled plan and free its device memory; the next call of a shape rebuilds it."""
    from megasim.app.torch import plans
    plans.release()


__all__ = ["Schedule", "Schedules", "ScheduleWarning", "TorchMissing", "static_reason", "runtime_reason", "release",
           *NEEDS_TORCH]
