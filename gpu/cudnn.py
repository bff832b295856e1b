"""A small ctypes binding to cuDNN's legacy forward-convolution API.

cuDNN's own Python frontend hides the legacy algorithm enumeration behind
heuristics; the paper's baseline is "every algorithm cuDNN offers", so we call
`cudnnConvolutionForward` ourselves with each `cudnnConvolutionFwdAlgo_t` in
turn. Only what a 3x3, stride-1, pad-1 forward convolution needs is bound:
handle, tensor/filter/convolution descriptors, the math type (CUDNN_FMA_MATH
keeps it strict FP32: no TF32 tensor cores), the workspace query and the call.

Every status is checked. A failure becomes `CudnnError`, a `MegasimError` that
carries cuDNN's status code and name, so a caller can report an algorithm
cuDNN refuses (CUDNN_STATUS_NOT_SUPPORTED and friends) instead of dying.
The library is found and loaded on first use, never at import, so this module
imports on a machine with no GPU.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import site
import sys
from enum import IntEnum

from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer

try:
    import cupy as cp
except ImportError:
    cp = None


class FwdAlgo(IntEnum):
    """cudnnConvolutionFwdAlgo_t, in cuDNN's numbering."""

    IMPLICIT_GEMM = 0
    IMPLICIT_PRECOMP_GEMM = 1
    GEMM = 2
    DIRECT = 3
    FFT = 4
    FFT_TILING = 5
    WINOGRAD = 6
    WINOGRAD_NONFUSED = 7


class Layout(IntEnum):
    """cudnnTensorFormat_t. For filters NCHW means KCRS and NHWC means KRSC."""

    NCHW = 0
    NHWC = 1


class DataType(IntEnum):
    """cudnnDataType_t, the two we use."""

    FLOAT = 0
    DOUBLE = 1


FMA_MATH = 3          # cudnnMathType_t CUDNN_FMA_MATH
CROSS_CORRELATION = 1  # cudnnConvolutionMode_t: what every framework calls convolution

_VOID = ctypes.c_void_p
_INT = ctypes.c_int
_SIZE = ctypes.c_size_t
_PVOID = ctypes.POINTER(ctypes.c_void_p)
_PINT = ctypes.POINTER(ctypes.c_int)
_PSIZE = ctypes.POINTER(ctypes.c_size_t)

# name: (argtypes); every one returns cudnnStatus_t
_SIGNATURES = {
    "cudnnCreate": [_PVOID],
    "cudnnDestroy": [_VOID],
    "cudnnSetStream": [_VOID, _VOID],
    "cudnnCreateTensorDescriptor": [_PVOID],
    "cudnnDestroyTensorDescriptor": [_VOID],
    "cudnnSetTensor4dDescriptor": [_VOID, _INT, _INT, _INT, _INT, _INT, _INT],
    "cudnnCreateFilterDescriptor": [_PVOID],
    "cudnnDestroyFilterDescriptor": [_VOID],
    "cudnnSetFilter4dDescriptor": [_VOID, _INT, _INT, _INT, _INT, _INT, _INT],
    "cudnnCreateConvolutionDescriptor": [_PVOID],
    "cudnnDestroyConvolutionDescriptor": [_VOID],
    "cudnnSetConvolution2dDescriptor": [_VOID, _INT, _INT, _INT, _INT, _INT, _INT, _INT, _INT],
    "cudnnSetConvolutionMathType": [_VOID, _INT],
    "cudnnGetConvolution2dForwardOutputDim": [_VOID, _VOID, _VOID, _PINT, _PINT, _PINT, _PINT],
    "cudnnGetConvolutionForwardWorkspaceSize": [_VOID, _VOID, _VOID, _VOID, _VOID, _INT, _PSIZE],
    "cudnnConvolutionForward": [_VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _VOID, _INT,
                                _VOID, _SIZE, _VOID, _VOID, _VOID],
}

# the sub-libraries the legacy convolution path links against, in load order
_SUBLIBS = ("libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9")


class CudnnError(MegasimError):
    """A cuDNN call returned something other than CUDNN_STATUS_SUCCESS."""

    def __init__(self, call: str, status: int, name: str, detail: str = ""):
        self.call, self.status, self.name = call, status, name
        super().__init__(f"{call} failed: {name} ({status})" + (f": {detail}" if detail else ""))

    @property
    def not_supported(self) -> bool:
        # cuDNN 9 numbers the NOT_SUPPORTED family 3000-3999
        return 3000 <= self.status < 4000 or "NOT_SUPPORTED" in self.name


def _candidates() -> list[str]:
    """Where libcudnn.so.9 may live: an override, the NVIDIA wheels, then the loader's own search."""
    found = []
    if os.environ.get("MEGASIM_CUDNN_LIB"):
        found.append(os.environ["MEGASIM_CUDNN_LIB"])
    try:
        from cuda import pathfinder
        path = pathfinder.load_nvidia_dynamic_lib("cudnn").abs_path
        if path:
            found.append(path)
    except Exception:
        pass  # pathfinder is optional; the globs below cover the wheels it would find
    roots = list(sys.path) + site.getsitepackages() + [site.getusersitepackages()]
    for root in roots:
        for pattern in ("nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cu*/lib/libcudnn.so.9",
                        "torch/lib/libcudnn.so.9"):
            found.extend(sorted(glob.glob(os.path.join(root, pattern))))
    found.append("libcudnn.so.9")
    return found


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """Load libcudnn.so.9 once, with its sub-libraries preloaded from the same folder."""
    errors = []
    for path in _candidates():
        try:
            folder = os.path.dirname(path)
            if folder:
                # the shim dlopens these by soname; preloading them globally makes that lookup certain
                for sub in _SUBLIBS:
                    if os.path.exists(os.path.join(folder, sub)):
                        ctypes.CDLL(os.path.join(folder, sub), mode=ctypes.RTLD_GLOBAL)
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            errors.append(f"{path}: {e}")
            continue
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        lib.cudnnGetErrorString.argtypes, lib.cudnnGetErrorString.restype = [_INT], ctypes.c_char_p
        lib.cudnnGetVersion.argtypes, lib.cudnnGetVersion.restype = [], ctypes.c_size_t
        if hasattr(lib, "cudnnGetLastErrorString"):
            lib.cudnnGetLastErrorString.argtypes = [ctypes.c_char_p, _SIZE]
            lib.cudnnGetLastErrorString.restype = None
        lib.megasim_path = path
        return lib
    raise MegasimError("cuDNN not found (libcudnn.so.9); set MEGASIM_CUDNN_LIB. Tried: " + "; ".join(errors))


def version() -> int:
    """cuDNN's version number, e.g. 91900 for 9.19.0."""
    return int(library().cudnnGetVersion())


def _call(name: str, *args) -> None:
    lib = library()
    status = getattr(lib, name)(*args)
    if status == 0:
        return
    err_name = (lib.cudnnGetErrorString(status) or b"CUDNN_STATUS_UNKNOWN").decode()
    detail = ""
    if hasattr(lib, "cudnnGetLastErrorString"):
        buf = ctypes.create_string_buffer(1024)
        lib.cudnnGetLastErrorString(buf, len(buf))
        detail = buf.value.decode(errors="replace").strip()
    raise CudnnError(name, status, err_name, detail)


class Handle:
    """A cuDNN handle bound to a CUDA stream (CuPy's current one by default)."""

    def __init__(self, stream_ptr: int | None = None):
        if stream_ptr is None:
            if cp is None:
                raise MegasimError("no GPU: CuPy is not importable, so there is no stream for cuDNN")
            stream_ptr = cp.cuda.get_current_stream().ptr
        h = ctypes.c_void_p()
        _call("cudnnCreate", ctypes.byref(h))
        self.ptr = h
        self.set_stream(stream_ptr)

    def set_stream(self, stream_ptr: int) -> None:
        _call("cudnnSetStream", self.ptr, ctypes.c_void_p(stream_ptr))

    def close(self) -> None:
        if self.ptr is not None:
            _call("cudnnDestroy", self.ptr)
            self.ptr = None

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Convolution:
    """Descriptors for one layer's 3x3/s1/p1 convolution in one layout and data type."""

    def __init__(self, layer: Layer, layout: Layout = Layout.NCHW, dtype: DataType = DataType.FLOAT):
        self.layer, self.layout, self.dtype = layer, Layout(layout), DataType(dtype)
        self.x, self.w, self.y, self.conv = (ctypes.c_void_p() for _ in range(4))
        _call("cudnnCreateTensorDescriptor", ctypes.byref(self.x))
        _call("cudnnCreateTensorDescriptor", ctypes.byref(self.y))
        _call("cudnnCreateFilterDescriptor", ctypes.byref(self.w))
        _call("cudnnCreateConvolutionDescriptor", ctypes.byref(self.conv))
        n, c, h, w, k = layer.n, layer.c, layer.h, layer.w, layer.k
        _call("cudnnSetTensor4dDescriptor", self.x, self.layout, self.dtype, n, c, h, w)
        _call("cudnnSetTensor4dDescriptor", self.y, self.layout, self.dtype, n, k, h, w)
        _call("cudnnSetFilter4dDescriptor", self.w, self.dtype, self.layout, k, c, 3, 3)
        _call("cudnnSetConvolution2dDescriptor", self.conv, 1, 1, 1, 1, 1, 1, CROSS_CORRELATION, self.dtype)
        _call("cudnnSetConvolutionMathType", self.conv, FMA_MATH)
        dims = [ctypes.c_int() for _ in range(4)]
        _call("cudnnGetConvolution2dForwardOutputDim", self.conv, self.x, self.w, *map(ctypes.byref, dims))
        if [d.value for d in dims] != [n, k, h, w]:
            raise MegasimError(f"cuDNN output dims {[d.value for d in dims]} != expected {[n, k, h, w]}")
        scalar = ctypes.c_float if self.dtype == DataType.FLOAT else ctypes.c_double
        self._alpha, self._beta = scalar(1.0), scalar(0.0)

    def workspace_bytes(self, handle: Handle, algo: FwdAlgo) -> int:
        size = ctypes.c_size_t()
        _call("cudnnGetConvolutionForwardWorkspaceSize", handle.ptr, self.x, self.w, self.conv, self.y,
              int(algo), ctypes.byref(size))
        return int(size.value)

    def forward(self, handle: Handle, algo: FwdAlgo, x_ptr: int, w_ptr: int, y_ptr: int,
                ws_ptr: int = 0, ws_bytes: int = 0) -> None:
        """y = conv(x, w), asynchronous on the handle's stream."""
        _call("cudnnConvolutionForward", handle.ptr, ctypes.byref(self._alpha), self.x, ctypes.c_void_p(x_ptr),
              self.w, ctypes.c_void_p(w_ptr), self.conv, int(algo), ctypes.c_void_p(ws_ptr or None), ws_bytes,
              ctypes.byref(self._beta), self.y, ctypes.c_void_p(y_ptr))

    def close(self) -> None:
        for fn, d in (("cudnnDestroyTensorDescriptor", self.x), ("cudnnDestroyTensorDescriptor", self.y),
                      ("cudnnDestroyFilterDescriptor", self.w), ("cudnnDestroyConvolutionDescriptor", self.conv)):
            if d.value:
                _call(fn, d)
                d.value = None

    def __enter__(self) -> Convolution:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
