"""`prepare(model, *inputs)`: make every schedule and compile every kernel a model will need, in parallel.

Without it, the first call of each new input shape searches its schedule
and compiles its kernel on the spot, one layer after another. `prepare`
runs the model once on torch's convolutions only, recording the input shape
of each megasim `Conv2d` that would run on the megakernel; then it resolves
all their schedules and compiles all their builds (for the input layouts
seen) in worker processes (`parallel.prepare_shapes`), and builds the plans,
so the next forward starts at once.
"""
from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

import torch
from torch import nn

from megasim.app.torch import plans
from megasim.app.torch.conv import Conv2d, FallbackWarning, device_index
from megasim.app.torch.ops import build_layout
from megasim.app.torch.parallel import prepare_shapes
from megasim.app.torch.schedules import shape_name


@contextmanager
def _shapes_of(layers: list[Conv2d]):
    """Record (layer, shape, device) of every eligible call while the layers run torch's convolution."""
    seen: list[tuple] = []
    refused: list[str] = []

    def forward(layer):
        def run(x):
            why = layer.megakernel_reason(x)
            if why is None:
                n, c, h, w = x.shape
                seen.append((layer, (n, c, h, w, layer.out_channels), device_index(x), build_layout(x)))
            else:
                refused.append(why)
            return nn.Conv2d.forward(layer, x)
        return run

    for layer in layers:
        layer.forward = forward(layer)
    try:
        yield seen, refused
    finally:
        for layer in layers:
            del layer.forward


def prepare(model: nn.Module, *inputs, workers: int | None = None) -> dict:
    """Schedules, compiled builds and plans for every shape `model(*inputs)` brings to its megasim
    layers; returns each shape's schedule and how long each step took."""
    layers = [m for m in model.modules() if isinstance(m, Conv2d)]
    t0 = time.perf_counter()
    with torch.no_grad(), _shapes_of(layers) as (seen, refused):
        model(*inputs)
    if not seen:
        why = (f"megasim.torch.prepare: no call of the model's {len(layers)} megasim layer(s) can run on the "
               f"megakernel, so nothing was prepared: {refused[0] if refused else 'none of them was called'}")
        warnings.warn(why, FallbackWarning, stacklevel=2)
    groups: dict[tuple, dict] = {}
    for layer, shape, device, layout in seen:
        groups.setdefault((layer._schedules_key, device), {}).setdefault(shape, set()).add(layout)
    t1 = time.perf_counter()
    made, failed = {}, {}
    for (key, device), layouts in groups.items():
        schedules = plans._SCHEDULES[key]
        found, errors = prepare_shapes(schedules, layouts, plans.device_gpu(device, schedules), workers,
                                       layouts=layouts)
        made.update({(key, device, shape): schedule for shape, schedule in found.items()})
        failed.update({shape_name(shape): why for shape, why in errors.items()})
    t2 = time.perf_counter()
    built = {(key, device, shape): plans.plan_for(key, shape, device) for key, device, shape in made}
    for layer, shape, device, layout in seen:
        plan = built.get((layer._schedules_key, device, shape))
        if plan is not None:
            layer.shape_plans[shape[:4]] = plan
            if not plan.runs_torch:
                plan.build(layout)
    return {"shapes": {shape_name(s): p.schedule.describe() for (_, _, s), p in built.items()}, "failed": failed,
            "seconds": {"shapes": t1 - t0, "schedules_and_compiles": t2 - t1, "plans": time.perf_counter() - t2}}


__all__ = ["prepare"]
