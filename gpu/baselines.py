"""What the fused kernel has to beat: every legacy cuDNN algorithm, and PyTorch.

`run_baselines` takes one layer's NHWC input and KRSC filters and runs the
convolution through each `cudnnConvolutionFwdAlgo_t` (strict FP32, see
gpu/cudnn.py), in cuDNN's NCHW layout, the paper's baseline (its NHWC kernels
were slow), and in NHWC, our kernels' own layout. Then through
`torch.nn.functional.conv2d` with cudnn.benchmark on and TF32 off, in
contiguous and channels-last memory. Each result carries its output in NHWC
so the caller checks correctness against its own reference.

Timing follows the device notes' method: CUDA events around every call on
CuPy's current stream, a warm-up first, the median of `reps` calls, and the
calls rotate over enough random input/output sets that together they exceed
twice the L2, so no call finds its operands cached by the one before. Layout
conversions are outside the timed region: each baseline is timed on data
already in the layout it wants.
"""
from __future__ import annotations



from megasim.gpu import cudnn
from megasim.gpu.backend import measurement_header
from megasim.gpu.cudnn import CudnnError, DataType, FwdAlgo, Layout
from megasim.gpu.timing import rotation_set_count, time_launches
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer

try:
    import cupy as cp
except ImportError:
    cp = None

SCHEMA_VERSION = 1
DEFAULT_LAYOUTS = (Layout.NCHW, Layout.NHWC)


def _require_gpu() -> None:
    if cp is None:
        raise MegasimError("no GPU: CuPy is not importable, so the cuDNN/torch baselines cannot run")
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # CuPy raises its own runtime error type when no driver is loaded
        raise MegasimError(f"no GPU: {e}") from None
    if count == 0:
        raise MegasimError("no GPU: CUDA reports no device")


def _empty_result(name: str, layout: Layout, status: str) -> dict:
    return {"name": name, "layout": layout.name, "supported": False, "status": status,
            "median_us": None, "p10_us": None, "p90_us": None, "workspace_bytes": None,
            "reps": 0, "rotation_sets": 0, "output": None}


def _rotation_sets(layer: Layer, x, w, l2_multiple: float, max_sets: int, seed: int) -> list[tuple]:
    """(x, w) NHWC/KRSC pairs: the caller's first, then fresh random ones, together > l2_multiple x L2."""
    nsets = rotation_set_count(cp, layer, l2_multiple, max_sets)
    rng = cp.random.RandomState(seed)
    return [(x, w)] + [(rng.standard_normal(x.shape, dtype=cp.float32),
                        rng.standard_normal(w.shape, dtype=cp.float32)) for _ in range(nsets - 1)]


def _to_layout(a, layout: Layout):
    """NHWC/KRSC -> the layout cuDNN is told about (a copy for NCHW, the array itself for NHWC)."""
    return cp.ascontiguousarray(a.transpose(0, 3, 1, 2)) if layout == Layout.NCHW else a


def _to_nhwc(y, layout: Layout):
    return cp.ascontiguousarray(y.transpose(0, 2, 3, 1)) if layout == Layout.NCHW else y.copy()


def _cudnn_algo(handle, conv, algo: FwdAlgo, xs, ws, ys, reps, warmup, stream) -> dict:
    layout = conv.layout
    name = f"cudnn:{algo.name}" if layout == Layout.NCHW else f"cudnn-nhwc:{algo.name}"
    try:
        ws_bytes = conv.workspace_bytes(handle, algo)
    except CudnnError as e:
        return {**_empty_result(name, layout, e.name), "detail": str(e)}
    try:
        workspace = cp.empty(ws_bytes, dtype=cp.uint8) if ws_bytes else None
    except cp.cuda.memory.OutOfMemoryError:
        return {**_empty_result(name, layout, "OUT_OF_MEMORY"), "workspace_bytes": ws_bytes,
                "detail": f"could not allocate a {ws_bytes}-byte workspace"}
    ws_ptr = workspace.data.ptr if workspace is not None else 0

    def launch(i: int) -> None:
        conv.forward(handle, algo, xs[i].data.ptr, ws[i].data.ptr, ys[i].data.ptr, ws_ptr, ws_bytes)

    try:
        ys[0].fill(cp.nan)
        launch(0)
        stream.synchronize()
        output = _to_nhwc(ys[0], layout)
        stats = time_launches(cp, launch, len(xs), reps, warmup, stream)
    except CudnnError as e:
        return {**_empty_result(name, layout, e.name), "workspace_bytes": ws_bytes, "detail": str(e)}
    return {**_empty_result(name, layout, "CUDNN_STATUS_SUCCESS"), **stats, "supported": True,
            "workspace_bytes": ws_bytes, "output": output}


def _torch(layout: Layout, xs, ws, reps, warmup, stream) -> dict:
    name = "torch" if layout == Layout.NCHW else "torch-nhwc"
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return _empty_result(name, layout, "skipped: torch not importable")
    if not torch.cuda.is_available():
        return _empty_result(name, layout, "skipped: torch sees no CUDA device")
    flags = torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        if layout == Layout.NCHW:
            xt = [torch.from_dlpack(a) for a in xs]
            wt = [torch.from_dlpack(a) for a in ws]
        else:  # NHWC storage seen as logical NCHW: torch's channels_last
            xt = [torch.from_dlpack(a).permute(0, 3, 1, 2) for a in xs]
            wt = [torch.from_dlpack(a).permute(0, 3, 1, 2) for a in ws]
        tstream = torch.cuda.ExternalStream(stream.ptr) if stream.ptr else torch.cuda.default_stream()

        def launch(i: int):
            return F.conv2d(xt[i], wt[i], padding=1)

        with torch.cuda.stream(tstream):
            y = launch(0).permute(0, 2, 3, 1).contiguous()
            stream.synchronize()
            output = cp.from_dlpack(y).copy()
            stream.synchronize()
            del y
            stats = time_launches(cp, launch, len(xs), reps, warmup, stream)
    finally:
        (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32,
         torch.backends.cuda.matmul.allow_tf32) = flags
    return {**_empty_result(name, layout, f"ok (torch {torch.__version__})"), **stats, "supported": True,
            "output": output}


def run_baselines(layer: Layer, x_nhwc, w_krsc, reps: int = 20, *, warmup: int = 3,
                  layouts=DEFAULT_LAYOUTS, algos=tuple(FwdAlgo), with_torch: bool = True,
                  seed: int = 0, l2_multiple: float = 2.0, max_sets: int = 32) -> list[dict]:
    """Time every cuDNN algorithm (per layout) and torch on `layer`; outputs are NHWC CuPy arrays.

    Each dict: name, layout, supported, status, median_us, p10_us, p90_us,
    workspace_bytes, reps, rotation_sets, output (None when unsupported) and,
    for refusals, detail. `output` is computed on the caller's own x/w.
    """
    _require_gpu()
    if reps < 1:
        raise MegasimError(f"reps must be >= 1, got {reps}")
    x = cp.asarray(x_nhwc, dtype=cp.float32)
    w = cp.asarray(w_krsc, dtype=cp.float32)
    if x.shape != (layer.n, layer.h, layer.w, layer.c) or w.shape != (layer.k, 3, 3, layer.c):
        raise MegasimError(f"layer {layer.name} ({layer.shape()}) wants x NHWC "
                           f"{(layer.n, layer.h, layer.w, layer.c)} and w KRSC {(layer.k, 3, 3, layer.c)}; "
                           f"got {x.shape} and {w.shape}")
    x, w = cp.ascontiguousarray(x), cp.ascontiguousarray(w)
    stream = cp.cuda.get_current_stream()
    sets = _rotation_sets(layer, x, w, l2_multiple, max_sets, seed)
    results = []
    with cudnn.Handle(stream.ptr) as handle:
        for layout in map(Layout, layouts):
            xs = [_to_layout(a, layout) for a, _ in sets]
            ws = [_to_layout(b, layout) for _, b in sets]
            y_shape = (layer.n, layer.k, layer.h, layer.w) if layout == Layout.NCHW else \
                (layer.n, layer.h, layer.w, layer.k)
            ys = [cp.empty(y_shape, dtype=cp.float32) for _ in sets]
            with cudnn.Convolution(layer, layout) as conv:
                for algo in map(FwdAlgo, algos):
                    results.append(_cudnn_algo(handle, conv, algo, xs, ws, ys, reps, warmup, stream))
            del ys
            if with_torch:
                results.append(_torch(layout, xs, ws, reps, warmup, stream))
    return results


def fastest(results: list[dict], prefix: str | None = None) -> dict | None:
    """The supported result with the lowest median, optionally among names starting with `prefix`."""
    timed = [r for r in results if r["supported"] and r["median_us"] is not None
             and (prefix is None or r["name"].startswith(prefix))]
    return min(timed, key=lambda r: r["median_us"]) if timed else None


def reference_fp64(layer: Layer, x_nhwc, w_krsc):
    """The same convolution in float64 through cuDNN (NCHW, IMPLICIT_GEMM): a reference for large layers."""
    _require_gpu()
    x = cp.ascontiguousarray(cp.asarray(x_nhwc, dtype=cp.float64).transpose(0, 3, 1, 2))
    w = cp.ascontiguousarray(cp.asarray(w_krsc, dtype=cp.float64).transpose(0, 3, 1, 2))
    y = cp.full((layer.n, layer.k, layer.h, layer.w), cp.nan, dtype=cp.float64)
    stream = cp.cuda.get_current_stream()
    with cudnn.Handle(stream.ptr) as handle, cudnn.Convolution(layer, Layout.NCHW, DataType.DOUBLE) as conv:
        algo = FwdAlgo.IMPLICIT_GEMM
        ws_bytes = conv.workspace_bytes(handle, algo)
        workspace = cp.empty(ws_bytes, dtype=cp.uint8) if ws_bytes else None
        conv.forward(handle, algo, x.data.ptr, w.data.ptr, y.data.ptr,
                     workspace.data.ptr if workspace is not None else 0, ws_bytes)
        stream.synchronize()
    return cp.ascontiguousarray(y.transpose(0, 2, 3, 1))


def rel_l2_error(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64; NaN anywhere in `out` gives NaN."""
    diff = out.astype(cp.float64) - ref
    return float(cp.linalg.norm(diff.ravel()) / cp.linalg.norm(ref.ravel()))


def device_header(commit: str | None = None) -> dict:
    """`measurement_header` plus the baselines' own libraries (cuDNN, torch, Python); `commit` overrides git's."""
    import platform

    _require_gpu()
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    header = {"schema_version": SCHEMA_VERSION, **measurement_header(), "cudnn_version": cudnn.version(),
              "cudnn_library": cudnn.library().megasim_path, "torch_version": torch_version,
              "python": platform.python_version()}
    if commit is not None:
        header["git_commit"] = commit
    return header
