"""How much of each network megasim.torch can take: the eligible convolutions' share of its FLOPs (Amdahl's bound).

    python docs/results/torch_h200/eligible_share.py > docs/results/torch_h200/eligible_share.md

Runs on any CPU in seconds, on the meta device (shapes only). Every convolution and linear layer of each network
in `models.py` is counted at batch 1, with 2 FLOPs per multiply-add; a layer is eligible when
`megasim.app.torch.eligibility.static_reason` says so, the rule `convert` applies. The share of FLOPs bounds
what a faster eligible convolution can buy: a network whose eligible share is s runs at best 1 / (1 - s) times
faster, however fast the megakernel. The bound is loose, since layers without FLOPs take time too; time shares
come from the GPU (`bench.py`).
"""
import importlib.util
from pathlib import Path

import torch
from torch import nn

from megasim.app.torch.eligibility import static_reason

HERE = Path(__file__).resolve().parent
INPUTS = {"resnet18": 224, "resnet34": 224, "resnet50": 224, "vgg16": 224, "unet": 256}


def _models():
    spec = importlib.util.spec_from_file_location("torch_h200_models", HERE / "models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flops(net: nn.Module, side: int) -> tuple[float, float, int, int]:
    """(all FLOPs, eligible FLOPs, eligible layers, convolution and linear layers) of one batch-1 forward."""
    total, eligible, counts = [0.0], [0.0], [0, 0]

    def conv(m, inputs, out):
        macs = out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        if isinstance(m, nn.ConvTranspose2d):
            macs = inputs[0].numel() * m.out_channels * m.kernel_size[0] * m.kernel_size[1]
        total[0] += 2 * macs
        counts[1] += 1
        if static_reason(m.kernel_size, m.stride, m.padding, m.dilation, m.groups, m.padding_mode,
                         isinstance(m, nn.ConvTranspose2d)) is None:
            eligible[0] += 2 * macs
            counts[0] += 1

    def linear(m, inputs, out):
        total[0] += 2 * out.numel() * m.in_features
        counts[1] += 1

    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            m.register_forward_hook(conv)
        elif isinstance(m, nn.Linear):
            m.register_forward_hook(linear)
    with torch.no_grad():
        net(torch.empty(1, 3, side, side, device="meta"))
    return total[0], eligible[0], counts[0], counts[1]


def main() -> None:
    models = _models()
    print("| network | input | GFLOP (batch 1) | eligible layers | eligible FLOP share | Amdahl bound |")
    print("|---|---|---|---|---|---|")
    for name, make in {**models.NETWORKS, **models.MORE_NETWORKS}.items():
        side = INPUTS[name]
        total, eligible, n_eligible, n_layers = flops(make().to("meta"), side)
        share = eligible / total
        print(f"| {name} | {side} x {side} | {total / 1e9:.2f} | {n_eligible} of {n_layers} | {share:.1%} | "
              f"{1 / (1 - share):.1f}x |")


if __name__ == "__main__":
    main()
