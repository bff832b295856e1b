"""Schedules compiled on a device: one plan per (schedules, shape, device), shared by its layers.

A plan is the schedule's build, compiled: a `FusedConv` (the megakernel, the
encoded task map, the control words) or a `NonFusedConv` (the four kernels),
with its U, V, M workspace; or, where the schedule chose torch's convolution
(`Schedules.decide`), no build at all, and the layer calls torch. Every layer of one shape on one device
uses the same plan, one after another on a stream, the way a network runs;
two streams running layers of the same shape at once would share a
workspace, which the plans do not guard against. The first launch of a plan
is checked: a block that timed out waiting (a mapping that deadlocks) is an
error, not a silently wrong output. Later launches are asynchronous, so CUDA
graph capture can record them. A plan's launches are bound once to the
driver (`gpu.launch.DriverLaunch`), so a call costs a few microseconds of
host time. No torch here: tensors arrive as device pointers and the stream
as its raw handle.
"""
from __future__ import annotations

from megasim.app.torch.schedules import Schedule, Schedules
from megasim.contract.errors import MegasimError
from megasim.gpu.backend import require_cupy
from megasim.gpu.launch import DriverLaunch

_SCHEDULES: dict[str, Schedules] = {}
_PLANS: dict[tuple, LayerPlan] = {}


class LayerPlan:
    def __init__(self, schedule: Schedule, device: int):
        self.schedule, self.device, self.checked, self.released = schedule, device, False, False
        self.eager: dict = {}  # input layout -> `eager.Verdict`: which side an eager call runs
        self.runs_torch = schedule.backend == "torch"
        self.conv = self.bound = None
        if self.runs_torch:
            return
        cp = require_cupy()
        with cp.cuda.Device(device):
            graph = schedule.graph()
            if schedule.launch == "fused":
                from megasim.gpu.megakernel import FusedConv
                self.conv = FusedConv(graph, schedule.mapping(graph), mode=schedule.mode, gemm=schedule.gemm)
            else:
                from megasim.gpu.nonfused import NonFusedConv
                self.conv = NonFusedConv(graph, gemm=schedule.gemm)
                self.checked = True  # four kernels in order on one stream: nothing waits, nothing to check
            self.bound = DriverLaunch(self.conv.steps())

    def launch(self, x: int, w: int, y: int, stream: int, capturing: bool = False) -> None:
        """y = conv(x, w) on the stream (a raw handle): device pointers, x and y NHWC, w [K][3][3][C], on the
        plan's device, which must be the current one. The first launch outside a capture is waited for and
        checked."""
        self.bound.launch(x, w, y, stream)
        if not self.checked and not capturing:
            cp = require_cupy()
            cp.cuda.runtime.streamSynchronize(stream)
            self.conv.check()
            self.checked = True


def register(schedules: Schedules) -> str:
    """The string a layer hands the custom op to name its `Schedules`."""
    key = schedules.key()
    _SCHEDULES[key] = schedules
    return key


def device_gpu(device: int, schedules: Schedules) -> str:
    """The GPU to simulate for this device: `schedules.gpu`, else the device's short name ("h200")."""
    if schedules.gpu:
        return schedules.gpu
    from megasim.gpu.microbench_stats import gpu_short_name
    name = require_cupy().cuda.runtime.getDeviceProperties(device)["name"]
    return gpu_short_name(name.decode() if isinstance(name, bytes) else str(name))


def plan_for(key: str, shape: tuple, device: int, capturing: bool = False) -> LayerPlan:
    """The plan of `shape` on `device`, made on first use (schedule, compile, workspace)."""
    at = (key, tuple(shape), device)
    plan = _PLANS.get(at)
    if plan is None:
        if capturing:
            raise MegasimError(f"megasim.torch: no plan yet for {shape} during CUDA graph capture; run the model "
                               "once before capturing (the first call of a shape compiles its kernel)")
        schedules = _SCHEDULES.get(key)
        if schedules is None:
            raise MegasimError(f"megasim.torch: unknown schedules {key!r} (register them first)")
        schedule = schedules.resolve(shape, device_gpu(device, schedules))
        schedule = schedules.decide(schedule, lambda s: measure_torch(s, device))
        plan = _PLANS[at] = LayerPlan(schedule, device)
    return plan


def measure_torch(shape: tuple, device: int, reps: int = 20) -> float:
    """torch's convolution of `shape` on `device`, median us: cuDNN autotuned with TF32 off, the faster of
    NCHW and channels_last (`gpu.baselines`), on inputs rotated past the L2, as `bench` times it."""
    from megasim.gpu.baselines import run_baselines
    from megasim.gpu.timing import rotation_inputs
    from megasim.contract.problem import Layer
    cp = require_cupy()
    n, c, h, w, k = shape
    with cp.cuda.Device(device):
        layer = Layer(n, c, h, w, k)
        xs, ws, _ = rotation_inputs(cp, layer, 11, nsets=1)
        rows = run_baselines(layer, xs[0], ws[0], reps, algos=(), with_torch=True)
        times = [r["median_us"] for r in rows if r.get("supported") and r.get("median_us")]
    if not times:
        raise MegasimError(f"megasim.torch: could not time torch's convolution of {shape}")
    return min(times)


def built() -> list[LayerPlan]:
    return list(_PLANS.values())


def release() -> None:
    """Drop every plan and free its device memory (CuPy's pool); the next call of a shape rebuilds it."""
    for plan in _PLANS.values():
        plan.released, plan.conv, plan.bound = True, None, None
    _PLANS.clear()
    cp = require_cupy()
    cp.get_default_memory_pool().free_all_blocks()


__all__ = ["LayerPlan", "register", "plan_for", "device_gpu", "built", "release"]
