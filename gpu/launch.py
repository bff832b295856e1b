"""A build's launch sequence, written once and issued two ways.

`Copy` and `Kernel` steps describe what one convolution does on a stream:
the fused build resets its control words and launches the megakernel; the
non-fused build launches its four kernels. Arguments are CuPy arrays or device pointers;
those that change per call are the placeholders `X`, `W` and `Y`, and `U` where the caller keeps
the transformed filters itself (a non-fused build's three-kernel sequence).

`run_cupy` issues the steps through CuPy, as `bench` and the tests always
have. `DriverLaunch` binds them once to the CUDA driver (CuPy's bindings of
`cuLaunchKernel` and the runtime's async copy), with each kernel's parameter
array built up front, so a call only writes three pointers and makes one
foreign call per step. That is what a host-bound caller needs: CuPy's
launch path costs about 5 us a kernel from Python on an H200 host, the bound
call about 4 (docs/results/torch_h200/host_time.md, 2026-11-29), the rest of
CuPy's per-call work (wrapping arrays and streams) is gone, and at batch 1
every layer of a network waits on the host.

`GraphLaunch` goes one step further for a sequence of several kernels (a
non-fused build's three): it makes them one CUDA graph, so a call is one
`cuGraphLaunch`, after rewriting only the kernel nodes whose pointers changed
since the last call (`cuGraphExecKernelNodeSetParams`, which copies the
arguments and touches nothing in flight).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

from megasim.contract.errors import MegasimError

X, W, Y, U = "x", "w", "y", "u"
SLOTS = (X, W, Y, U)


@dataclass(frozen=True)
class Copy:
    """Device-to-device copy of `nbytes` from `src` to `dst` (pointers)."""

    dst: int
    src: int
    nbytes: int


@dataclass(frozen=True)
class Kernel:
    """One launch: `function` a CuPy RawKernel (`name` in its module), its 1-D grid and block, and its
    arguments (CuPy arrays, pointers, or a slot name of `SLOTS`)."""

    function: object
    grid: int
    block: int
    args: tuple
    name: str = ""

    def cupy_args(self, x, w, y, u=None) -> tuple:
        """The arguments as a CuPy launch takes them: the slots filled with `x`, `w`, `y`, `u`, pointers as
        uint64."""
        import numpy as np
        bound = {X: x, W: w, Y: y, U: u}
        return tuple(bound[a] if isinstance(a, str) else np.uint64(a) if isinstance(a, int) else a for a in self.args)


def run_cupy(steps, x, w, y, stream, u=None) -> None:
    """Issue `steps` through CuPy on `stream`, with CuPy arrays for the slots."""
    import cupy as cp
    for step in steps:
        if isinstance(step, Copy):
            cp.cuda.runtime.memcpyAsync(step.dst, step.src, step.nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
                                        stream.ptr)
        else:
            step.function((step.grid,), (step.block,), step.cupy_args(x, w, y, u), stream=stream)


def _driver_launch():
    """The driver's cuLaunchKernel as a Python callable taking plain ints: CuPy's Cython binding where this
    CuPy has one (about 1 us a call), else libcuda through ctypes (a few us: argument conversion)."""
    import cupy as cp
    launch = getattr(cp.cuda.driver, "launchKernel", None)
    if launch is not None:
        return launch
    launch = _libcuda().cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    launch.restype = ctypes.c_int

    def checked(*args):
        rc = launch(*args)
        if rc:
            raise MegasimError(f"CUDA driver error {rc} launching a convolution kernel")
    return checked


class DriverLaunch:
    """`steps` bound to the driver: `launch(x_ptr, w_ptr, y_ptr, stream_ptr, u_ptr)` issues them all
    (a call is the function, the arguments before the stream, the stream, the arguments after it).

    Each kernel's parameter array is built once; the slots are `c_uint64`s every array points at, so a call
    sets them once. Driver errors raise (CuPy's CUDADriverError, or MegasimError).
    """

    def __init__(self, steps):
        import cupy as cp
        launch = _driver_launch()
        copy, d2d = cp.cuda.runtime.memcpyAsync, cp.cuda.runtime.memcpyDeviceToDevice
        self.slots = {name: ctypes.c_uint64(0) for name in SLOTS}
        self._keep = []
        self._calls = []
        for step in steps:
            if isinstance(step, Copy):
                self._calls.append((copy, (step.dst, step.src, step.nbytes, d2d), ()))
                continue
            values = [self.slots[a] if isinstance(a, str) else ctypes.c_uint64(_ptr(a)) for a in step.args]
            params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
            self._keep += [values, params]
            self._calls.append((launch, (_function_ptr(step.function), step.grid, 1, 1, step.block, 1, 1, 0),
                                (ctypes.addressof(params), 0)))

    def launch(self, x: int, w: int, y: int, stream: int, u: int = 0) -> None:
        s = self.slots
        s[X].value, s[W].value, s[Y].value, s[U].value = x, w, y, u
        for call, before, after in self._calls:
            call(*before, stream, *after)


class _NodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h, CUDA 12): `kern` and `ctx` left null, so `func` in the current
    context is what runs."""

    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_mem", ctypes.c_uint), ("kernel_params", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


def _libcuda():
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise MegasimError(f"cannot load the CUDA driver (libcuda.so.1): {exc}") from None


class GraphLaunch:
    """Kernel `steps` as one CUDA graph, a chain in their order: `launch(x_ptr, w_ptr, y_ptr, stream_ptr,
    u_ptr)` updates the nodes that read a slot whose pointer changed, then launches the graph once.

    For host-bound callers outside a CUDA graph capture (a capture records `DriverLaunch`'s kernels
    instead). The graph belongs to the device current when it is made. Driver errors raise MegasimError.
    """

    def __init__(self, steps):
        if any(isinstance(step, Copy) for step in steps):
            raise MegasimError("GraphLaunch takes kernel steps only")
        lib = self._lib = _libcuda()
        self.slots = {name: ctypes.c_uint64(0) for name in SLOTS}
        self._last = dict.fromkeys(SLOTS, 0)
        self._keep, self._nodes, self._params, readers = [], [], [], {name: [] for name in SLOTS}
        graph = ctypes.c_void_p()
        self._check(lib.cuGraphCreate(ctypes.byref(graph), 0), "cuGraphCreate")
        self._graph = graph
        for i, step in enumerate(steps):
            values = [self.slots[a] if isinstance(a, str) else ctypes.c_uint64(_ptr(a)) for a in step.args]
            array = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
            params = _NodeParams(func=_function_ptr(step.function), kernel_params=ctypes.addressof(array))
            params.grid[:], params.block[:] = (step.grid, 1, 1), (step.block, 1, 1)
            node, deps = ctypes.c_void_p(), (ctypes.c_void_p * 1)(*self._nodes[-1:])
            self._check(lib.cuGraphAddKernelNode_v2(ctypes.byref(node), graph, deps, len(self._nodes[-1:]),
                                                    ctypes.byref(params)), "cuGraphAddKernelNode")
            self._keep += [values, array]
            self._nodes.append(node)
            self._params.append(ctypes.byref(params))
            self._keep.append(params)
            for name in {a for a in step.args if isinstance(a, str)}:
                readers[name].append(i)
        self._readers = readers
        exe = ctypes.c_void_p()
        self._check(lib.cuGraphInstantiateWithFlags(ctypes.byref(exe), graph, ctypes.c_ulonglong(0)),
                    "cuGraphInstantiate")
        self._exec = exe
        self._set, self._launch = lib.cuGraphExecKernelNodeSetParams_v2, lib.cuGraphLaunch

    def launch(self, x: int, w: int, y: int, stream: int, u: int = 0) -> None:
        last, dirty = self._last, set()
        for name, value in ((X, x), (W, w), (Y, y), (U, u)):
            if last[name] != value:
                last[name] = self.slots[name].value = value
                dirty.update(self._readers[name])
        for i in dirty:
            rc = self._set(self._exec, self._nodes[i], self._params[i])
            if rc:
                last.update(dict.fromkeys(SLOTS, 0))
                self._check(rc, "cuGraphExecKernelNodeSetParams")
        rc = self._launch(self._exec, ctypes.c_void_p(stream))
        if rc:
            self._check(rc, "cuGraphLaunch")

    def _check(self, rc: int, what: str) -> None:
        if rc:
            name = ctypes.c_char_p()
            self._lib.cuGetErrorName(rc, ctypes.byref(name))
            raise MegasimError(f"CUDA driver error {(name.value or b'?').decode()} ({rc}) in {what}")

    def __del__(self):
        lib = getattr(self, "_lib", None)
        if lib is not None:
            if getattr(self, "_exec", None):
                lib.cuGraphExecDestroy(self._exec)
            if getattr(self, "_graph", None):
                lib.cuGraphDestroy(self._graph)


def _function_ptr(function) -> int:
    """The driver's CUfunction of a CuPy RawKernel (which wraps it) or Function."""
    return int(getattr(function, "kernel", function).ptr)


def _ptr(a) -> int:
    """A device pointer from an int or a CuPy array."""
    return a if isinstance(a, int) else a.data.ptr


__all__ = ["Copy", "Kernel", "X", "W", "Y", "U", "run_cupy", "DriverLaunch", "GraphLaunch"]
