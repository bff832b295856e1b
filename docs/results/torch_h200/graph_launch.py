"""Host cost of a non-fused call's three launches: three driver-bound launches against one CUDA graph.

    python docs/results/torch_h200/graph_launch.py OUT

Host us per call (`host_time.host_us`: 200 back-to-back calls, no synchronisation, / 200, median of 7 loops;
the committed results were taken with 5 warm-up calls where host_us makes 3): an empty CuPy
`RawKernel` launch; one and three empty kernels through `gpu.launch.DriverLaunch`; the same three as one
`gpu.launch.GraphLaunch`, its pointers unchanged and changed every call (every node rewritten). Then two
non-fused builds megasim.torch runs at batch 1 (ResNet-18's 1x256x14x14 and 1x512x7x7 shapes): the layer's
output through the build's driver-bound kernels and through a graph of the same kernels (bit-equal to the
layer's own call), and the host time of each. Writes OUT/graph_launch.json and prints it.
"""
import json
import sys

import cupy as cp
import torch

import host_time  # this folder's, on the path when run as a script
import megasim.torch as mtorch
from megasim.gpu.launch import DriverLaunch, GraphLaunch, Kernel, U, W, X, Y

EMPTY = r'extern "C" __global__ void empty(const float* a, const float* b, float* c) {}'


def host_us(fn) -> float:
    return host_time.host_us(fn, 200, 7)  # host_time.md's measurement, two more loops


def empty_kernels(raw: int) -> dict:
    """Launch costs of empty kernels: three in a chain through workspace pointers, like a non-fused build."""
    stream = cp.cuda.ExternalStream(raw)
    empty = cp.RawKernel(EMPTY, "empty")
    bufs = [cp.zeros(64, dtype=cp.float32) for _ in range(8)]
    p = [b.data.ptr for b in bufs]
    v, m = bufs[6], bufs[7]
    three = [Kernel(empty.kernel, 1, 32, (X, v, m)), Kernel(empty.kernel, 1, 32, (v, U, m)),
             Kernel(empty.kernel, 1, 32, (m, Y, v))]
    one, bound, graph = DriverLaunch(three[:1]), DriverLaunch(three), GraphLaunch(three)
    turn = [0]

    def new_pointers():
        turn[0] ^= 1
        o = 3 * turn[0]
        graph.launch(p[o], 0, p[o + 1], raw, p[o + 2])

    return {"cupy launch": host_us(lambda: empty((1,), (32,), (bufs[0], bufs[1], bufs[2]), stream=stream)),
            "driver 1": host_us(lambda: one.launch(p[0], 0, p[1], raw, p[2])),
            "driver 3": host_us(lambda: bound.launch(p[0], 0, p[1], raw, p[2])),
            "graph 3 same ptrs": host_us(lambda: graph.launch(p[0], 0, p[1], raw, p[2])),
            "graph 3 new ptrs": host_us(new_pointers)}


def nonfused_builds(raw: int) -> dict:
    """Two non-fused layers of ResNet-18 at batch 1: the same output and the host time, kernels against graph."""
    rows, dev = {}, torch.device("cuda")
    for ch, side in ((256, 14), (512, 7)):
        with torch.no_grad():
            ours = mtorch.Conv2d(ch, ch, 3, padding=1, bias=False,
                                 schedules=mtorch.Schedules(backend="megasim")).to(dev).eval()
            x = torch.randn(1, ch, side, side, device=dev).contiguous(memory_format=torch.channels_last)
            y0 = ours(x)
            plan = ours.shape_plans[tuple(x.shape)]
            b = plan.builds["nhwc"]
            if b.filters is None:
                rows[f"{ch}x{side}"] = "fused: " + plan.schedule.describe()
                continue
            wk = ours._filters()
            u = torch.empty(b.u_floats, device=dev)
            b.transform_filters(wk.data_ptr(), u.data_ptr(), raw)
            graph = GraphLaunch(b.conv.steps(filters_given=True))
            y1, y2 = torch.full_like(y0, float("nan")), torch.full_like(y0, float("nan"))
            args = (x.data_ptr(), wk.data_ptr())
            b.bound.launch(*args, y1.data_ptr(), raw, u.data_ptr())
            graph.launch(*args, y2.data_ptr(), raw, u.data_ptr())
            torch.cuda.synchronize()
            rows[f"{ch}x{side} equal"] = bool(torch.equal(y0, y1) and torch.equal(y1, y2))
            rows[f"{ch}x{side} bound"] = host_us(lambda: b.bound.launch(*args, y1.data_ptr(), raw, u.data_ptr()))
            rows[f"{ch}x{side} graph"] = host_us(lambda: graph.launch(*args, y2.data_ptr(), raw, u.data_ptr()))
            rows[f"{ch}x{side} layer call"] = host_us(lambda: ours(x))
    return rows


def main() -> int:
    out = sys.argv[1]
    torch.backends.cudnn.allow_tf32 = False
    raw = torch.cuda.current_stream().cuda_stream
    rows = {**empty_kernels(raw), **nonfused_builds(raw)}
    with open(f"{out}/graph_launch.json", "w") as f:
        json.dump(rows, f, indent=1)
    for k, val in rows.items():
        print(f"{k:40s} {round(val, 2) if isinstance(val, float) else val}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
