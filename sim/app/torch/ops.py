"""The megakernel as a PyTorch operator: `torch.ops.megasim.winograd_conv3x3`, its eager path, and its autograd.

`run(plan, x, w_krsc)` is what every call comes to: the output allocated in
the input's memory format, three device pointers and torch's current raw
stream handed to the plan's driver-bound launch (`plans`). Eager calls with
no gradient to record reach it straight from `Conv2d.forward`, with no
dispatcher in between; that is the host path a batch-1 network waits on.

The same work is a `torch.library.custom_op` with a fake (meta)
implementation, so `torch.compile` traces through it as one opaque node and
CUDA graph capture records its device operations on the current stream.
Each plan has an NHWC build for channels_last tensors and an NCHW build for
contiguous ones, so neither layout pays a transpose.

`WinogradConv3x3` is the `torch.autograd.Function` around the operator: the
backward is torch's own convolution backward (`aten.convolution_backward`),
on the original NCHW-shaped filters.
"""

import torch

from megasim.app.torch import plans

PADDING = [1, 1]
ONES = [1, 1]


def is_channels_last(x: torch.Tensor) -> bool:
    """Whether the output should be channels_last: the input is, and is not also plain contiguous."""
    return x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()


def build_layout(x: torch.Tensor) -> str:
    """Which build of a plan reads `x` as it is: "nhwc" for channels_last, else "nchw" (after `contiguous()`)."""
    return "nhwc" if is_channels_last(x) else "nchw"


def _out(x: torch.Tensor, nhwc: torch.Tensor) -> torch.Tensor:
    y = nhwc.permute(0, 3, 1, 2)
    return y if is_channels_last(x) else y.contiguous()


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream(device: int) -> int:
    """torch's current stream on `device`, as the raw handle (no Stream object made)."""
    if _raw_stream is not None:
        return _raw_stream(device)
    return torch.cuda.current_stream(device).cuda_stream


def run(plan, x: torch.Tensor, w_krsc: torch.Tensor, kept: dict | None = None) -> torch.Tensor:
    """conv2d(x, w), 3x3, stride 1, padding 1, on `plan` (a megasim build, not torch's convolution), on x's
    device, which is the current one; the output is in x's memory format, which the build reads and writes
    as it is (an NHWC build for channels_last, an NCHW build for contiguous x). `kept`, a layer's own dict,
    holds its transformed filters for a non-fused build (`transformed`), so a call launches three kernels."""
    n, _, h, w = x.shape
    layout = build_layout(x)
    if layout == "nhwc":
        y = torch.empty((n, w_krsc.shape[0], h, w), device=x.device, memory_format=torch.channels_last)
    else:
        x = x.contiguous()  # a no-op for NCHW; any other strides are read as NCHW
        y = torch.empty((n, w_krsc.shape[0], h, w), device=x.device)
    stream = current_stream(plan.device)
    b = plan.builds.get(layout)
    if b is not None and b.checked:
        u = transformed(plan, b, w_krsc, kept, stream) if b.filters is not None and kept is not None else 0
        b.launch(x.data_ptr(), w_krsc.data_ptr(), y.data_ptr(), stream, u, torch.cuda.is_current_stream_capturing())
    else:
        plan.launch(x.data_ptr(), w_krsc.data_ptr(), y.data_ptr(), stream, torch.cuda.is_current_stream_capturing(),
                    layout)
    return y


def transformed(plan, build, w_krsc: torch.Tensor, kept: dict, stream: int) -> int:
    """The device address of U for these filters, transformed on the stream when `w_krsc` is not the tensor
    they were last transformed from (the layer makes a new one whenever its weight changes)."""
    entry = kept.get(plan)
    if entry is None or entry[0] is not w_krsc:
        u = entry[1] if entry is not None else torch.empty(build.u_floats, device=w_krsc.device)
        build.transform_filters(w_krsc.data_ptr(), u.data_ptr(), stream)
        entry = kept[plan] = (w_krsc, u)
    return entry[1].data_ptr()


_get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def run_on_device(plan, x: torch.Tensor, w_krsc: torch.Tensor, kept: dict | None = None) -> torch.Tensor:
    """`run`, made current on the plan's device (x's) first when it is not."""
    if plan.device == _get_device():
        return run(plan, x, w_krsc, kept)
    with torch.cuda.device(plan.device):
        return run(plan, x, w_krsc, kept)


@torch.library.custom_op("megasim::winograd_conv3x3", mutates_args=(), device_types="cuda")
def winograd_conv3x3(x: torch.Tensor, w_krsc: torch.Tensor, schedules: str) -> torch.Tensor:
    """conv2d(x, w), 3x3, stride 1, padding 1, through the shape's schedule: its build, or torch's
    convolution where the schedule chose it (a compiled graph reaches here for either)."""
    n, c, h, w = x.shape
    plan = plans.plan_for(schedules, (n, c, h, w, w_krsc.shape[0]), x.device.index,
                          torch.cuda.is_current_stream_capturing())
    if plan.runs_torch:
        y = torch.nn.functional.conv2d(x, w_krsc.permute(0, 3, 1, 2), padding=1)
        return y.contiguous(memory_format=torch.channels_last) if is_channels_last(x) else y.contiguous()
    return run_on_device(plan, x, w_krsc.contiguous())


@winograd_conv3x3.register_fake
def _(x, w_krsc, schedules):
    n, _, h, w = x.shape
    return _out(x, x.new_empty((n, h, w, w_krsc.shape[0])))


def krsc(weight: torch.Tensor) -> torch.Tensor:
    """[K][C][3][3] filters as the kernels read them, [K][3][3][C]."""
    return weight.detach().permute(0, 2, 3, 1).contiguous()


class WinogradConv3x3(torch.autograd.Function):
    """Forward on the megakernel; backward through torch's convolution backward."""

    @staticmethod
    def forward(x, weight, w_krsc, schedules):
        return torch.ops.megasim.winograd_conv3x3(x, w_krsc, schedules)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, _, _ = inputs
        ctx.save_for_backward(x, weight)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], False]
        gx, gw, _ = torch.ops.aten.convolution_backward(grad, x, weight, None, ONES, PADDING, ONES, False, [0, 0], 1,
                                                        mask)
        return gx, gw, None, None


__all__ = ["winograd_conv3x3", "WinogradConv3x3", "krsc", "is_channels_last", "build_layout", "run", "run_on_device", "current_stream"]
