"""Schedules compiled on a device: one plan per (schedules, shape, device), shared by its layers.

A plan is a `FusedConv` (the compiled build, the encoded task map, the control
words) with its U, V, M workspace. Every layer of one shape on one device
uses the same plan, one after another on a stream, the way a network runs;
two streams running layers of the same shape at once would share a
workspace, which the plans do not guard against. The first launch of a plan
is checked: a block that timed out waiting (a mapping that deadlocks) is an
error, not a silently wrong output. Later launches are asynchronous, so CUDA
graph capture can record them. No torch here: tensors arrive as device
pointers (`wrap`).
"""
from __future__ import annotations

from megasim.app.torch.schedules import Schedule, Schedules
from megasim.contract.errors import MegasimError
from megasim.gpu.backend import require_cupy

_SCHEDULES: dict[str, Schedules] = {}
_PLANS: dict[tuple, LayerPlan] = {}


class LayerPlan:
    def __init__(self, schedule: Schedule, device: int):
        from megasim.gpu.megakernel import FusedConv
        cp = require_cupy()
        with cp.cuda.Device(device):
            graph = schedule.graph()
            self.conv = FusedConv(graph, schedule.mapping(graph), mode=schedule.mode)
        self.schedule, self.device, self.checked = schedule, device, False

    def launch(self, x, w, y, stream_ptr: int, capturing: bool = False) -> None:
        """y = conv(x, w) on the stream: x, y NHWC and w [K][3][3][C], CuPy arrays on the plan's device."""
        cp = require_cupy()
        with cp.cuda.Device(self.device):
            stream = cp.cuda.ExternalStream(stream_ptr)
            self.conv.launch(x, w, y, stream)
            if not self.checked and not capturing:
                stream.synchronize()
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
        plan = _PLANS[at] = LayerPlan(schedules.resolve(shape, device_gpu(device, schedules)), device)
    return plan


def built() -> list[LayerPlan]:
    return list(_PLANS.values())


def release() -> None:
    """Drop every plan and free its device memory (CuPy's pool); the next call of a shape rebuilds it."""
    _PLANS.clear()
    cp = require_cupy()
    cp.get_default_memory_pool().free_all_blocks()


def wrap(ptr: int, shape: tuple, owner, device: int):
    """A float32 CuPy array over `ptr` (C-contiguous `shape`), keeping `owner` alive: no copy."""
    cp = require_cupy()
    size = 4
    for dim in shape:
        size *= int(dim)
    memory = cp.cuda.UnownedMemory(ptr, size, owner, device)
    return cp.ndarray(tuple(shape), dtype=cp.float32, memptr=cp.cuda.MemoryPointer(memory, 0))


__all__ = ["LayerPlan", "register", "plan_for", "device_gpu", "built", "release", "wrap"]
