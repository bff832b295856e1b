"""Host time of one convolution call: megasim's Conv2d against torch's, and the launch floors under both.

    python docs/results/torch_h200/host_time.py OUT [--calls 200] [--loops 5]

Per shape of ResNet-18's 3x3 stride-1 layers at batch 1 (where every layer is host-bound): the CPU wall
time of `calls` back-to-back calls with no synchronisation in between, divided by `calls`, the median of
`loops` such loops, with gradients off (eval, `torch.no_grad`). What is timed:

- `megasim nchw`, `megasim cl`: a megasim `Conv2d` (`megasim.torch`) with NCHW and with channels_last input,
  running its build (backend "megasim": the eager race, which could hand the call to torch, is off);
- `torch nchw`, `torch cl`: the same layer as a torch `nn.Conv2d` (cudnn.benchmark on, TF32 off);
- `cupy launch`: an empty CuPy `RawKernel` with three array arguments on torch's stream (an ExternalStream
  made once), the floor the target is measured from;
- `driver launch`: the same empty kernel through `gpu.launch.DriverLaunch`, what a CUDA graph capture records;
- `graph launch`: the same empty kernel as a one-node CUDA graph (`gpu.launch.GraphLaunch`), how megasim's
  eager calls launch;
- `custom_op`, `library.define`: an operator that allocates its output and does nothing else, registered
  each way and called through `torch.ops`, to price the registration a compiled graph needs.

Writes OUT/host_time.json and OUT/host_time.md, and prints the table.
"""
import argparse
import copy
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import cupy as cp
import torch

import megasim.torch as mtorch
from megasim.gpu.launch import DriverLaunch, GraphLaunch, Kernel, W, X, Y

SHAPES = ((64, 56), (128, 28), (256, 14), (512, 7))  # (channels, image side) of ResNet-18's 3x3 stride-1 layers
EMPTY = r'extern "C" __global__ void empty(const float* x, const float* w, float* y) {}'


def host_us(fn, calls: int, loops: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(loops):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def registrations():
    """An allocate-only operator registered as a custom_op and through library.define/impl."""
    @torch.library.custom_op("megasim_host::alloc_op", mutates_args=(), device_types="cuda")
    def alloc_op(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    @alloc_op.register_fake
    def _(x):
        return torch.empty_like(x)

    lib = torch.library.Library("megasim_host", "FRAGMENT")
    lib.define("alloc_def(Tensor x) -> Tensor")
    lib.impl("alloc_def", lambda x: torch.empty_like(x), "CUDA")
    torch.library.register_fake("megasim_host::alloc_def", lambda x: torch.empty_like(x), lib=lib)
    return lib, torch.ops.megasim_host.alloc_op, torch.ops.megasim_host.alloc_def


def host_args():
    """OUT, --calls and --loops of a host-time script (this one, host_parts.py); OUT made, and torch's
    convolution set as both time it: cudnn.benchmark on, TF32 off."""
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--loops", type=int, default=5)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    return args


def main() -> int:
    args = host_args()
    dev = torch.device("cuda")
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    empty = cp.RawKernel(EMPTY, "empty")
    a, b, c = (cp.zeros(64, dtype=cp.float32) for _ in range(3))
    driver = DriverLaunch([Kernel(empty.kernel, 1, 32, (X, W, Y))])
    graph = GraphLaunch([Kernel(empty.kernel, 1, 32, (X, W, Y))])
    lib, alloc_op, alloc_def = registrations()
    raw = torch.cuda.current_stream().cuda_stream
    layers = []
    with torch.no_grad():
        for ch, side in SHAPES:  # schedules, compiles and cuDNN's autotuning happen here, before any timing
            ref = torch.nn.Conv2d(ch, ch, 3, padding=1, bias=False).to(dev).eval()
            ours = mtorch.Conv2d(ch, ch, 3, padding=1, bias=False,
                                 schedules=mtorch.Schedules(backend="megasim")).to(dev).eval()
            ours.weight.copy_(ref.weight)
            ref_cl = copy.deepcopy(ref).to(memory_format=torch.channels_last)
            x = torch.randn(1, ch, side, side, device=dev)
            x_cl = x.contiguous(memory_format=torch.channels_last)
            for fn in (ours, ref, ref_cl):
                fn(x), fn(x_cl)
            layers.append((ch, side, ref, ref_cl, ours, x, x_cl))
        torch.cuda.synchronize()
    rows = []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning on the hot path is a failure of this measurement
        for ch, side, ref, ref_cl, ours, x, x_cl in layers:
            plan = ours.shape_plans[tuple(x.shape)]
            row = {"shape": [1, ch, side, side, ch], "runs": plan.schedule.describe(),
                   "rel_err": ((ours(x) - ref(x)).norm() / ref(x).norm()).item(),
                   "rel_err_cl": ((ours(x_cl) - ref(x)).norm() / ref(x).norm()).item(),
                   "megasim nchw": host_us(lambda: ours(x), args.calls, args.loops),
                   "megasim cl": host_us(lambda: ours(x_cl), args.calls, args.loops),
                   "torch nchw": host_us(lambda: ref(x), args.calls, args.loops),
                   "torch cl": host_us(lambda: ref_cl(x_cl), args.calls, args.loops),
                   "cupy launch": host_us(lambda: empty((1,), (32,), (a, b, c), stream=stream), args.calls,
                                          args.loops),
                   "driver launch": host_us(lambda: driver.launch(a.data.ptr, b.data.ptr, c.data.ptr, raw),
                                            args.calls, args.loops),
                   "graph launch": host_us(lambda: graph.launch(a.data.ptr, b.data.ptr, c.data.ptr, raw),
                                           args.calls, args.loops),
                   "custom_op": host_us(lambda: alloc_op(x), args.calls, args.loops),
                   "library.define": host_us(lambda: alloc_def(x), args.calls, args.loops)}
            rows.append(row)
    cols = ["megasim nchw", "megasim cl", "torch nchw", "torch cl", "cupy launch", "driver launch", "graph launch", "custom_op",
            "library.define"]
    lines = [f"host us per call ({args.calls} calls, median of {args.loops} loops), {torch.cuda.get_device_name()}",
             "", "| shape | " + " | ".join(cols) + " | megasim - cupy launch (nchw / cl) |",
             "|---" * (len(cols) + 2) + "|"]
    for r in rows:
        over = f"{r['megasim nchw'] - r['cupy launch']:.1f} / {r['megasim cl'] - r['cupy launch']:.1f}"
        lines.append(f"| {'x'.join(map(str, r['shape']))} | " + " | ".join(f"{r[c]:.1f}" for c in cols)
                     + f" | {over} |")
    lines += ["", "what each megasim layer ran:"]
    lines += [f"- {'x'.join(map(str, r['shape']))}: {r['runs']} (rel. error {r['rel_err']:.1e}, channels_last "
              f"{r['rel_err_cl']:.1e})" for r in rows]
    text = "\n".join(lines)
    binding = "CuPy's driver.launchKernel" if hasattr(cp.cuda.driver, "launchKernel") else "ctypes cuLaunchKernel"
    text += f"\n\ndriver launch binding: {binding}"
    (args.out / "host_time.json").write_text(json.dumps({"device": torch.cuda.get_device_name(), "binding": binding,
                                                         "torch": torch.__version__, "rows": rows}, indent=1))
    (args.out / "host_time.md").write_text(text + "\n")
    print(text)
    del lib
    return 0


if __name__ == "__main__":
    sys.exit(main())
