"""Which convolutions the megakernel covers, and in one short phrase why not.

The kernels compute one thing: a 3x3 convolution with stride 1, zero padding
1 and dilation 1, one group, float32, on a CUDA device. `static_reason`
answers from the layer's hyper-parameters (known when the layer is built, so
`convert` can say it up front); `runtime_reason` from what a call brings
(input rank, device, dtype), known only at the call. Both return None when
the megakernel can run it. No torch needed: the arguments are plain values.
"""
from __future__ import annotations


def _pair(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def static_reason(kernel_size, stride, padding, dilation, groups: int, padding_mode: str = "zeros",
                  transposed: bool = False) -> str | None:
    """Why a layer with these hyper-parameters is not the megakernel's, or None."""
    kernel, step, spread = _pair(kernel_size), _pair(stride), _pair(dilation)
    if transposed:
        return "a transposed convolution"
    if kernel != (3, 3):
        return f"kernel {kernel[0]}x{kernel[1]}, not 3x3"
    if step != (1, 1):
        return f"stride {step[0] if step[0] == step[1] else step}, not 1"
    if spread != (1, 1):
        return f"dilation {spread[0] if spread[0] == spread[1] else spread}, not 1"
    if groups != 1:
        return f"{groups} groups, not 1"
    if padding != "same" and _pair(padding) != (1, 1):
        return f"padding {padding!r}, not 1"
    if padding_mode != "zeros":
        return f"padding_mode {padding_mode!r}, not 'zeros'"
    return None


def runtime_reason(ndim: int, device_type: str, dtype: str, weight_device_type: str, weight_dtype: str) -> str | None:
    """Why this call cannot run on the megakernel (input rank, device, dtype), or None. `dtype`s are
    torch's names without the prefix ("float32")."""
    if ndim != 4:
        return f"a {ndim}-D input (the megakernel takes a batch: N, C, H, W)"
    if device_type != "cuda" or weight_device_type != "cuda":
        return f"input on {device_type}, weight on {weight_device_type}: the megakernel runs on CUDA devices"
    if dtype != "float32" or weight_dtype != "float32":
        return f"input {dtype}, weight {weight_dtype}: the megakernel computes in float32 only"
    return None


__all__ = ["static_reason", "runtime_reason"]
