"""`settle(model, *inputs)`: keep the converted layers' eager choices only where the whole forward is faster.

Each layer's eager race (`eager.race`) times one layer alone. Inside a network the layers overlap: at batch 1
the host issues a layer while the GPU still runs the one before, so a layer's GPU time can hide behind the next
layers' host time, and a choice that wins alone can lose in the network (docs/results/torch_h200/README.md).
`settle` times the thing the user runs: the forward on these inputs, eager, with the layers' own choices and
with every megasim layer of those input shapes handing its calls to torch's convolution, the two taking turns
call by call, each call waited for. The faster one stays for those shapes, so a settled model is never slower
than torch's convolutions everywhere, within the timing's noise. What it measured is returned and kept on each
layer (`Conv2d.settled`), for the report.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from megasim.app.torch.conv import Conv2d, eager_key

REPS = 10


def _forward_ms(model, inputs, sync) -> float:
    sync()
    start = time.perf_counter()
    model(*inputs)
    sync()
    return (time.perf_counter() - start) * 1e3


def settle(model: torch.nn.Module, *inputs, reps: int = REPS, sync=None) -> dict:
    """Time `model(*inputs)` (no gradient) with its layers' eager choices and with torch's convolution in every
    megasim layer it calls, keep the faster; returns {"megasim_ms", "torch_ms", "kept", "layers"}."""
    sync = sync or torch.cuda.synchronize
    layers = [m for m in model.modules() if isinstance(m, Conv2d)]
    seen: list[tuple] = []

    def record(layer, args):
        seen.append((layer, eager_key(args[0])))

    hooks = [layer.register_forward_pre_hook(record) for layer in layers]
    with torch.no_grad():
        try:
            model(*inputs)  # plans made, races run, choices cached
        finally:
            for hook in hooks:
                hook.remove()
        own = {(layer, at): layer._eager.get(at) for layer, at in seen}
        ours = [(layer, at) for (layer, at), plan in own.items() if plan is not None]
        if not ours:
            return {"megasim_ms": None, "torch_ms": None, "kept": "torch", "layers": 0}

        def use(choice: str) -> None:
            for layer, at in ours:
                layer._eager[at] = own[(layer, at)] if choice == "megasim" else None

        times = {"megasim": [], "torch": []}
        for _ in range(2):  # warm-up
            for choice in times:
                use(choice)
                _forward_ms(model, inputs, sync)
        for _ in range(reps):
            for choice in times:
                use(choice)
                times[choice].append(_forward_ms(model, inputs, sync))
        medians = {choice: float(np.median(v)) for choice, v in times.items()}
        kept = "torch" if medians["torch"] < medians["megasim"] else "megasim"
        use(kept)
    result = {"megasim_ms": medians["megasim"], "torch_ms": medians["torch"], "kept": kept, "layers": len(ours)}
    for layer, _ in ours:
        layer.settled = result
    return result


__all__ = ["settle"]
