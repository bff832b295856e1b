"""Where a megasim.torch call's host time goes, and where a batch-1 network's time goes.

    python docs/results/torch_h200/host_parts.py OUT [--calls 200] [--loops 5]

Part 1, per call (host us: `calls` back-to-back calls, no synchronisation, / calls, median of `loops`), on two
ResNet-18 shapes at batch 1 (1x64x56x56, 1x128x28x28): the whole megasim `Conv2d` call (build forced, each
layout), the same layer with torch's convolution chosen (the wrapper's own cost), torch's `nn.Conv2d`, and
each step of the call timed alone: the module call of an `nn.Identity`, the eager key, `torch.empty` in
channels_last, the filter cache, the stream handle, the bound launch (kernel by kernel, filters transformed),
the graph launch an eager call makes (filters kept), `ops.run`, the NCHW transposes.

Part 2, per network at batch 1 (ResNet-18, ResNet-34, UNet), NCHW and channels_last: the forward's host
time (perf_counter until `net(x)` returns, the GPU idle at the start) and its wall time (until the GPU is
done), medians of 30 interleaved calls, for torch's network, the converted network as its races chose, the
converted network with every layer on torch's convolution, and every layer on its build.

Writes OUT/host_parts.json and prints two tables.
"""
import copy
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

import megasim.torch as mtorch
from megasim.app.torch import conv as mconv, ops

HERE = Path(__file__).resolve().parent


def per_call(calls: int, loops: int) -> list[dict]:
    host_us = _load("host_time").host_us  # the same measurement as host_time.md's
    dev = torch.device("cuda")
    rows = []
    ident = torch.nn.Identity()
    with torch.no_grad():
        for ch, side in ((64, 56), (128, 28)):
            ref = torch.nn.Conv2d(ch, ch, 3, padding=1, bias=False).to(dev).eval()
            ours = mtorch.Conv2d(ch, ch, 3, padding=1, bias=False,
                                 schedules=mtorch.Schedules(backend="megasim")).to(dev).eval()
            theirs = mtorch.Conv2d(ch, ch, 3, padding=1, bias=False,
                                   schedules=mtorch.Schedules(backend="torch")).to(dev).eval()
            ours.weight.copy_(ref.weight), theirs.weight.copy_(ref.weight)
            x = torch.randn(1, ch, side, side, device=dev)
            x_cl = x.contiguous(memory_format=torch.channels_last)
            for fn in (ours, theirs, ref):
                fn(x), fn(x_cl)
            plan = ours.shape_plans[tuple(x.shape)]
            wk = ours._filters()
            y_nhwc = torch.empty(1, side, side, ch, device=dev)
            raw = ops.current_stream(0)
            row = {"shape": [1, ch, side, side, ch], "runs": plan.schedule.describe(),
                   "launches": len(plan.builds["nhwc"].bound._calls),
                   "megasim cl": host_us(lambda: ours(x_cl), calls, loops),
                   "megasim nchw": host_us(lambda: ours(x), calls, loops),
                   "wrapper->torch nchw": host_us(lambda: theirs(x), calls, loops),
                   "torch nchw": host_us(lambda: ref(x), calls, loops),
                   "F.conv2d nchw": host_us(lambda: torch.nn.functional.conv2d(x, ref.weight, None, 1, 1), calls,
                                            loops),
                   "Identity module call": host_us(lambda: ident(x), calls, loops),
                   "eager_key": host_us(lambda: mconv.eager_key(x_cl), calls, loops),
                   "torch.empty cl": host_us(lambda: torch.empty((1, ch, side, side), device=dev,
                                                                 memory_format=torch.channels_last), calls, loops),
                   "torch.empty nhwc + permute": host_us(lambda: torch.empty((1, side, side, ch), device=dev).permute(
                       0, 3, 1, 2), calls, loops),
                   "torch.empty nchw": host_us(lambda: torch.empty((1, ch, side, side), device=dev), calls, loops),
                   "_filters": host_us(ours._filters, calls, loops),
                   "current_stream": host_us(lambda: ops.current_stream(0), calls, loops),
                   "is_current_stream_capturing": host_us(torch.cuda.is_current_stream_capturing, calls, loops),
                   "is_compiling": host_us(torch.compiler.is_compiling, calls, loops),
                   "bound launch": host_us(lambda: plan.builds["nhwc"].launch(x_cl.data_ptr(), wk.data_ptr(),
                                                                               y_nhwc.data_ptr(), raw), calls, loops),
                   "graph launch": host_us(lambda: plan.builds["nhwc"].graph.launch(
                       x_cl.data_ptr(), wk.data_ptr(), y_nhwc.data_ptr(), raw, plan.builds["nhwc"]._own_u), calls,
                       loops),
                   "ops.run cl": host_us(lambda: ops.run(plan, x_cl, wk), calls, loops),
                   "ops.run nchw": host_us(lambda: ops.run(plan, x, wk), calls, loops),
                   "ops.run_on_device cl": host_us(lambda: ops.run_on_device(plan, x_cl, wk), calls, loops),
                   "nhwc copy in": host_us(lambda: x.permute(0, 2, 3, 1).contiguous(), calls, loops),
                   "nchw copy out": host_us(lambda: y_nhwc.permute(0, 3, 1, 2).contiguous(), calls, loops)}
            rows.append(row)
    return rows


def _load(name: str):
    """A sibling script of this folder as a module (models.py, host_time.py)."""
    spec = importlib.util.spec_from_file_location(f"torch_h200_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def forward_times(fns: dict, reps: int = 30) -> dict:
    """Per variant: median host ms (until the call returns) and wall ms (until the GPU is done), interleaved."""
    for fn in fns.values():
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    host = {k: [] for k in fns}
    wall = {k: [] for k in fns}
    for _ in range(reps):
        for key, fn in fns.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            host[key].append((t1 - t0) * 1e3)
            wall[key].append((t2 - t0) * 1e3)
    return {k: {"host_ms": statistics.median(host[k]), "wall_ms": statistics.median(wall[k])} for k in fns}


def networks() -> list[dict]:
    models = _load("models")
    torch.manual_seed(0)
    rows = []
    for name, side in (("resnet18", 224), ("resnet34", 224), ("unet", 256)):
        make = {**models.NETWORKS, **models.MORE_NETWORKS}[name]
        for cl in (False, True):
            fmt = torch.channels_last if cl else torch.contiguous_format
            ref = make().cuda().eval().to(memory_format=fmt)
            raced = copy.deepcopy(ref)
            mtorch.convert(raced)
            alltorch = copy.deepcopy(ref)
            mtorch.convert(alltorch, schedules=mtorch.Schedules(backend="torch"))
            allours = copy.deepcopy(ref)
            mtorch.convert(allours, schedules=mtorch.Schedules(backend="megasim"))
            x = torch.randn(1, 3, side, side, device="cuda").contiguous(memory_format=fmt)
            with torch.no_grad():
                nets = {"torch": ref, "megasim raced": raced, "megasim all torch": alltorch,
                        "megasim all builds": allours}
                for net in nets.values():
                    net(x)
                times = forward_times({k: (lambda n=n: n(x)) for k, n in nets.items()})
                chose = [m._eager for m in raced.modules() if isinstance(m, mtorch.Conv2d)]
                ours = sum(1 for d in chose for p in d.values() if p is not None)
            rows.append({"network": name, "layout": "channels_last" if cl else "nchw", "times": times,
                         "layers on builds (raced)": ours, "megasim layers": len(chose)})
            mtorch.release()
    return rows


def main() -> int:
    args = _load("host_time").host_args()
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    doc["per_call"] = per_call(args.calls, args.loops)
    (args.out / "host_parts.json").write_text(json.dumps(doc, indent=1))
    for row in doc["per_call"]:
        print(row["shape"], row["runs"][:40], "launches", row["launches"])
        for k, v in row.items():
            if isinstance(v, float):
                print(f"   {k:32s} {v:7.2f} us")
    doc["networks"] = networks()
    (args.out / "host_parts.json").write_text(json.dumps(doc, indent=1))
    print("\n| network | layout | variant | host ms | wall ms |\n|---|---|---|---|---|")
    for row in doc["networks"]:
        for k, t in row["times"].items():
            print(f"| {row['network']} | {row['layout']} | {k} | {t['host_ms']:.3f} | {t['wall_ms']:.3f} |")
        print(f"|  |  | raced: {row['layers on builds (raced)']} of {row['megasim layers']} layers on builds | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
