"""The megakernel as a PyTorch operator: `torch.ops.megasim.winograd_conv3x3`, and its autograd.

The forward is a `torch.library.custom_op` with a fake (meta) implementation,
running the shape's build (fused or non-fused, `plans`),
so `torch.compile` traces through it as one opaque node and CUDA graph
capture records its two device operations (the control-word reset copy and
the kernel launch) on the current stream. It takes the input in either
memory format and the filters as [K][3][3][C]; it returns the output in the
input's format (channels_last in, channels_last out). Our kernels read and
write NHWC, so a channels_last tensor goes in and out as it is, and an NCHW
one costs a transpose each way, which the benchmark reports.

`WinogradConv3x3` is the `torch.autograd.Function` around it: the backward is
torch's own convolution backward (`aten.convolution_backward`), on the
original NCHW-shaped filters.
"""

import torch

from megasim.app.torch import plans

PADDING = [1, 1]
ONES = [1, 1]


def is_channels_last(x: torch.Tensor) -> bool:
    """Whether the output should be channels_last: the input is, and is not also plain contiguous."""
    return x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()


def _out(x: torch.Tensor, nhwc: torch.Tensor) -> torch.Tensor:
    y = nhwc.permute(0, 3, 1, 2)
    return y if is_channels_last(x) else y.contiguous()


@torch.library.custom_op("megasim::winograd_conv3x3", mutates_args=(), device_types="cuda")
def winograd_conv3x3(x: torch.Tensor, w_krsc: torch.Tensor, schedules: str) -> torch.Tensor:
    """conv2d(x, w), 3x3, stride 1, padding 1, through the shape's schedule: its build, or torch's
    convolution where the schedule chose it (a compiled graph reaches here for either)."""
    n, c, h, w = x.shape
    k = w_krsc.shape[0]
    device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    capturing = torch.cuda.is_current_stream_capturing()
    plan = plans.plan_for(schedules, (n, c, h, w, k), device, capturing)
    if plan.runs_torch:
        y = torch.nn.functional.conv2d(x, w_krsc.permute(0, 3, 1, 2), padding=1)
        return y.contiguous(memory_format=torch.channels_last) if is_channels_last(x) else y.contiguous()
    x_nhwc = x.permute(0, 2, 3, 1)
    if not x_nhwc.is_contiguous():
        x_nhwc = x_nhwc.contiguous()
    w_krsc = w_krsc.contiguous()
    y_nhwc = torch.empty((n, h, w, k), device=x.device, dtype=torch.float32)
    plan.launch(plans.wrap(x_nhwc.data_ptr(), x_nhwc.shape, x_nhwc, device),
                plans.wrap(w_krsc.data_ptr(), w_krsc.shape, w_krsc, device),
                plans.wrap(y_nhwc.data_ptr(), y_nhwc.shape, y_nhwc, device),
                torch.cuda.current_stream(x.device).cuda_stream, capturing)
    return _out(x, y_nhwc)


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


__all__ = ["winograd_conv3x3", "WinogradConv3x3", "krsc", "is_channels_last"]
