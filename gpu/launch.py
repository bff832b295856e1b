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
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise MegasimError(f"cannot load the CUDA driver (libcuda.so.1): {exc}") from None
    launch = lib.cuLaunchKernel
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


def _function_ptr(function) -> int:
    """The driver's CUfunction of a CuPy RawKernel (which wraps it) or Function."""
    return int(getattr(function, "kernel", function).ptr)


def _ptr(a) -> int:
    """A device pointer from an int or a CuPy array."""
    return a if isinstance(a, int) else a.data.ptr


__all__ = ["Copy", "Kernel", "X", "W", "Y", "U", "run_cupy", "DriverLaunch"]
