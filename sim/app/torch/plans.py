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
driver: an eager call is one CUDA graph launch (`gpu.launch.GraphLaunch`,
2.4-5.1 us of host time for a non-fused build's three kernels where three
bound launches take 11.3, H200 host, 2026-11-29), and a capture records the
kernels themselves (`gpu.launch.DriverLaunch`). No torch here: tensors
arrive as device pointers and the stream as its raw handle.
"""
from __future__ import annotations

from megasim.app.torch.schedules import Schedule, Schedules
from megasim.contract.errors import MegasimError
from megasim.gpu.backend import require_cupy
from megasim.gpu.launch import DriverLaunch, GraphLaunch

_SCHEDULES: dict[str, Schedules] = {}
_PLANS: dict[tuple, LayerPlan] = {}


class Build:
    """One layout's compiled build of a plan, bound to the driver; its first launch is checked.

    A non-fused build is bound as its last three kernels (`bound`) and the filter transform (`filters`), so
    a caller that keeps a layer's transformed filters (U, `u_floats` floats) launches three kernels a call;
    one that does not passes no U and the build transforms into its workspace first.
    """

    def __init__(self, conv):
        self.conv = conv
        nonfused = conv.__class__.__name__ == "NonFusedConv"
        steps = conv.steps(filters_given=True) if nonfused else conv.steps()
        self.bound = DriverLaunch(steps)  # what a CUDA graph capture records
        self.graph = GraphLaunch(steps)  # what an eager call launches
        self.filters = DriverLaunch(conv.filter_steps()) if nonfused else None
        self.u_floats = conv.u_floats if nonfused else 0
        self._own_u = int(conv.ws.U.data.ptr) if nonfused else 0
        self.checked = nonfused  # four kernels in order: nothing waits, nothing to check

    def launch(self, x: int, w: int, y: int, stream: int, u: int = 0, capturing: bool = True) -> None:
        """y = conv(x, w) on the stream: one graph launch, or (`capturing`, the safe default) the kernels
        one by one, which is what a capture can record."""
        if self.filters is not None and not u:
            u = self._own_u
            self.transform_filters(w, u, stream)
        (self.bound if capturing else self.graph).launch(x, w, y, stream, u)

    def transform_filters(self, w: int, u: int, stream: int) -> None:
        """U (at `u`, `u_floats` floats) = the Winograd transform of the filters at `w` ([K][3][3][C])."""
        self.filters.launch(0, w, 0, stream, u)


def make_conv(schedule: Schedule, layout: str, workspace=None):
    """The build megasim.torch runs for `schedule`: x and y in `layout`; a fused one resets its own control
    words (one launch per call)."""
    graph = schedule.graph()
    if schedule.launch == "fused":
        from megasim.gpu.megakernel import FusedConv
        return FusedConv(graph, schedule.mapping(graph), mode=schedule.mode, gemm=schedule.gemm, layout=layout,
                         self_reset=True, workspace=workspace)
    from megasim.gpu.nonfused import NonFusedConv
    return NonFusedConv(graph, gemm=schedule.gemm, layout=layout, workspace=workspace)


def compile_build(schedule: Schedule, layout: str) -> None:
    """Compile (into CuPy's disk cache) the module `make_conv` will load, without a device workspace."""
    from megasim.gpu.backend import KernelConfig, module
    from megasim.gpu.megakernel import fused_module
    if schedule.launch == "fused":
        fused_module(schedule.graph(), schedule.mode, gemm=schedule.gemm, layout=layout, self_reset=True)
    else:
        module(KernelConfig.of(schedule.graph(), gemm=schedule.gemm, layout=layout))


class LayerPlan:
    def __init__(self, schedule: Schedule, device: int):
        self.schedule, self.device, self.released = schedule, device, False
        self.eager: dict = {}  # input layout -> `eager.Verdict`: which side an eager call runs
        self.runs_torch = schedule.backend == "torch"
        self.builds: dict[str, Build] = {}  # "nhwc" (channels_last tensors), "nchw": made on first use
        if not self.runs_torch:
            self.build("nhwc")

    @property
    def conv(self):
        """The channels_last build's FusedConv or NonFusedConv (None where torch's convolution runs)."""
        b = self.builds.get("nhwc")
        return b.conv if b else None

    def build(self, layout: str, capturing: bool = False) -> Build:
        """The build for x and y in `layout`, compiled on first use (never during a CUDA graph capture)."""
        b = self.builds.get(layout)
        if b is None:
            if capturing:
                raise MegasimError(f"megasim.torch: no {layout} build yet for {self.schedule.shape} during CUDA "
                                   "graph capture; run the model once with this input layout before capturing")
            cp = require_cupy()
            with cp.cuda.Device(self.device):
                other = next(iter(self.builds.values()), None)
                b = self.builds[layout] = Build(make_conv(self.schedule, layout, other.conv.ws if other else None))
        return b

    def launch(self, x: int, w: int, y: int, stream: int, capturing: bool = False, layout: str = "nhwc",
               u: int = 0) -> None:
        """y = conv(x, w) on the stream (a raw handle): device pointers, x and y in `layout`, w [K][3][3][C]
        (and, for a non-fused build, its transform U if the caller keeps it), on the plan's device, which
        must be the current one. The first launch of a build outside a capture is waited for and checked."""
        b = self.builds.get(layout) or self.build(layout, capturing)
        b.launch(x, w, y, stream, u, capturing)
        if not b.checked and not capturing:
            cp = require_cupy()
            cp.cuda.runtime.streamSynchronize(stream)
            b.conv.check()
            b.checked = True


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
    if not _PLANS:  # nothing was compiled, so nothing holds device memory: no GPU library is asked for
        return
    for plan in _PLANS.values():
        plan.released, plan.builds = True, {}
    _PLANS.clear()
    cp = require_cupy()
    cp.get_default_memory_pool().free_all_blocks()


__all__ = ["LayerPlan", "Build", "make_conv", "compile_build", "register", "plan_for", "device_gpu", "built", "release"]
