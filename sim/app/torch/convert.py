"""`convert(model)`: every eligible `nn.Conv2d` of a model becomes a megasim `Conv2d`, in place.

A layer is swapped when it is a plain `nn.Conv2d` (a subclass may change
what forward does, so it is left alone) with the megakernel's
hyper-parameters and float32 weights (`eligibility.static_reason`). The new
layer takes over the old one's Parameter objects, so optimisers, hooks on
parameters and `state_dict` keys carry over. The report lists what was
swapped and, for every convolution left as it was, why; once the model has run
(or `prepare` has made its plans), it also lists, per swapped layer and input
shape, what runs (the build, or torch's convolution) and why
(`ConvertReport.runs`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from megasim.app.torch.conv import Conv2d
from megasim.app.torch.eligibility import static_reason
from megasim.app.torch.schedules import Schedules


@dataclass
class ConvertReport:
    model: nn.Module
    swapped: list = field(default_factory=list)  # (module name, description)
    kept: list = field(default_factory=list)     # (module name, description, why)

    def __str__(self) -> str:
        lines = [f"megasim.torch.convert: {len(self.swapped)} convolution(s) swapped to megasim's Conv2d, "
                 f"{len(self.kept)} left to torch"]
        if self.swapped and not torch.cuda.is_available():
            lines.append("  no CUDA device here: every swapped layer runs torch's convolution until its inputs are "
                         "on one (the megakernel runs only there)")
        lines += [f"  swapped  {name}: {what}" for name, what in self.swapped]
        lines += [f"  kept     {name}: {what}: {why}" for name, what, why in self.kept]
        runs = self.runs()
        if runs:
            lines.append("per input shape, what runs and why:")
            lines += [f"  {r['name']} {r['shape']}: {r['runs']}" for r in runs]
        return "\n".join(lines)

    def runs(self) -> list[dict]:
        """Per swapped layer and input shape it has run (or `prepare` planned): what runs and why, the
        build's prediction and torch's measurement."""
        out = []
        for name, module in self.model.named_modules():
            for shape, plan in getattr(module, "shape_plans", {}).items() if isinstance(module, Conv2d) else ():
                s = plan.schedule
                verdicts = {v.layout: v for v in plan.eager.values()}
                eager = "; ".join(v.describe() for v in verdicts.values())
                out.append({"name": name or "(model)", "shape": list(shape),
                            "runs": s.describe() + (f"; {eager}" if eager else ""),
                            "backend": s.backend, "build": s.build.label, "predicted_us": s.predicted_us,
                            "torch_us": s.torch_us, "why": s.reason, "settled": module.settled,
                            "eager": {k: {"runs": "torch" if v.runs_torch else "megasim", "megasim_us": v.megasim_us,
                                          "torch_us": v.torch_us, "megasim_host_us": v.megasim_host_us,
                                          "torch_host_us": v.torch_host_us} for k, v in verdicts.items()}})
        return out

    def to_dict(self) -> dict:
        return {"swapped": [{"name": n, "layer": w} for n, w in self.swapped],
                "kept": [{"name": n, "layer": w, "why": y} for n, w, y in self.kept], "runs": self.runs()}


def _describe(conv: nn.Conv2d) -> str:
    return (f"Conv2d({conv.in_channels}, {conv.out_channels}, kernel_size={conv.kernel_size}, stride={conv.stride}, "
            f"padding={conv.padding}, groups={conv.groups}, bias={conv.bias is not None})")


def why_not(conv: nn.Module) -> str | None:
    """Why `conv` is not swapped, or None."""
    if isinstance(conv, Conv2d):
        return "already a megasim Conv2d"
    if type(conv) is not nn.Conv2d:
        return f"a {type(conv).__name__}, not a plain nn.Conv2d"
    if conv.weight.dtype.is_floating_point and str(conv.weight.dtype) != "torch.float32":
        return f"weights are {str(conv.weight.dtype).removeprefix('torch.')}: the megakernel computes in float32"
    return static_reason(conv.kernel_size, conv.stride, conv.padding, conv.dilation, conv.groups, conv.padding_mode)


def convert(model: nn.Module, schedules: Schedules | None = None) -> ConvertReport:
    """Swap, in place, every eligible `nn.Conv2d` of `model` (the model itself too, returned in the
    report's `model`); one `Schedules` serves them all."""
    schedules = schedules or Schedules()
    report = ConvertReport(model)
    if isinstance(model, nn.Conv2d):
        why = why_not(model)
        if why is None:
            report.model = Conv2d.from_conv(model, schedules, name="(model)")
            report.swapped.append(("(model)", _describe(model)))
        else:
            report.kept.append(("(model)", _describe(model), why))
        return report
    for parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if not isinstance(child, nn.Conv2d):
                continue
            name = f"{parent_name}.{child_name}" if parent_name else child_name
            why = why_not(child)
            if why is None:
                setattr(parent, child_name, Conv2d.from_conv(child, schedules, name=name))
                report.swapped.append((name, _describe(child)))
            elif not isinstance(child, Conv2d):
                report.kept.append((name, _describe(child), why))
    return report


__all__ = ["convert", "ConvertReport", "why_not"]
