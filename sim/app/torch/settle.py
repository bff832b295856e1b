"""`settle(model, *inputs)`: keep the converted layers' eager choices, or torch's network, whichever forward is faster.

Each layer's eager race (`eager.race`) times one layer alone. Inside a network the layers overlap: at batch 1
the host issues a layer while the GPU still runs the one before, so a layer's GPU time can hide behind the next
layers' host time, and a choice that wins alone can lose in the network (docs/results/torch_h200/README.md).
`settle` times the thing the user runs: the forward on these inputs, eager, with the layers' own choices, with
each layer on the side whose call costs less host time (the races measure it), and as torch's own network (the
layers `plain`: nn.Conv2d's forward, not even megasim's dispatch, which costs a few microseconds a layer in a
host-bound forward), taking turns call by call, each call waited for. The fastest stays; where that is torch's,
the layers stay plain for every input until the next `settle` (or `layer.plain = False`), so a settled model is
never slower than torch's network, within the timing's noise. What it measured is returned and kept on each
layer (`Conv2d.settled`), for the report.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from megasim.app.torch.conv import Conv2d, eager_key
from megasim.app.torch.eager import layout_of

REPS = 10


def _forward_ms(model, inputs, sync) -> float:
    sync()
    start = time.perf_counter()
    model(*inputs)
    sync()
    return (time.perf_counter() - start) * 1e3


PLAIN = "plain"  # the torch choice: every megasim layer of the forward runs as a plain nn.Conv2d (`Conv2d.plain`)


def _candidates(seen: dict[tuple, str]) -> dict[str, dict]:
    """The choices worth timing for the calls `seen` ({(layer, eager key): the input's layout, as the eager race
    names it}), each {(layer, eager key): plan or None}: the layers' own (their races), each layer on the side
    whose eager call costs less host time (what a host-bound forward waits on) where that differs, and torch's
    network itself (`PLAIN`: the layers as plain nn.Conv2d, no megasim dispatch)."""
    own = {(layer, at): layer._eager.get(at) for layer, at in seen}
    host = {}
    for (layer, at), layout in seen.items():
        plan = layer.shape_plans.get(tuple(at[0]))
        verdict = plan.eager.get(layout) if plan is not None else None
        host[(layer, at)] = own[(layer, at)] if verdict is None else (None if verdict.torch_host_cheaper else plan)
    options = {"megasim": own, "torch": PLAIN}
    if host != own and any(p is not None for p in host.values()):
        options["host"] = host
    return options


def settle(model: torch.nn.Module, *inputs, reps: int = REPS, sync=None) -> dict:
    """Time `model(*inputs)` (no gradient) with its layers' eager choices, with each layer on its cheaper host
    side, and as torch's network (every megasim layer it calls plain); keep the fastest. Returns
    {"megasim_ms", "torch_ms", "host_ms" (None where that choice is one of the others), "kept", "layers" (calls
    of megasim layers, per layer and input), "on_builds" (of those, how many run a build now)}."""
    sync = sync or torch.cuda.synchronize
    layers = [m for m in model.modules() if isinstance(m, Conv2d)]
    for layer in layers:
        layer.plain = False  # an earlier settle's choice is timed again
    seen: dict[tuple, str] = {}  # (layer, eager key) -> the input's layout, in calling order

    def record(layer, args):
        seen[(layer, eager_key(args[0]))] = layout_of(args[0])

    hooks = [layer.register_forward_pre_hook(record) for layer in layers]
    with torch.no_grad():
        try:
            model(*inputs)  # plans made, races run, choices cached
        finally:
            for hook in hooks:
                hook.remove()
        options = _candidates(seen)
        ours = [key for key, plan in options["megasim"].items() if plan is not None]
        if not ours and "host" not in options:
            for layer, _ in seen:
                layer.plain = True
            return {"megasim_ms": None, "torch_ms": None, "host_ms": None, "kept": "torch", "layers": len(seen),
                    "on_builds": 0}

        def use(choice: str) -> None:
            plain = options[choice] is PLAIN
            for layer, _ in seen:
                layer.plain = plain
            if not plain:
                for (layer, at), plan in options[choice].items():
                    layer._eager[at] = plan

        times = {choice: [] for choice in options}
        for _ in range(2):  # warm-up
            for choice in times:
                use(choice)
                _forward_ms(model, inputs, sync)
        for _ in range(reps):
            for choice in times:
                use(choice)
                times[choice].append(_forward_ms(model, inputs, sync))
        medians = {choice: float(np.median(v)) for choice, v in times.items()}
        kept = min(medians, key=medians.get)
        use(kept)
    result = {"megasim_ms": medians["megasim"], "torch_ms": medians["torch"], "host_ms": medians.get("host"),
              "kept": kept, "layers": len(seen),
              "on_builds": 0 if options[kept] is PLAIN else sum(p is not None for p in options[kept].values())}
    for layer, _ in seen:
        layer.settled = result
    return result


__all__ = ["settle"]
