"""ResNet-18/34/50 and VGG-16 as torchvision defines them, and a small UNet, without torchvision: same layers,
shapes and init.

The GPU tests (tests/gpu/test_torch.py) and the benchmark (bench.py) build them with random weights, so
nothing is downloaded and torchvision need not be installed. The definitions follow torchvision's
`resnet18()` (BasicBlock, [2, 2, 2, 2]) and `vgg16()` (configuration "D", no batch norm), including their
initialisation (Kaiming normal, fan out, for the convolutions), so activations keep their scale through
the network and a convolution's error is not drowned by biases at the output.
"""
import torch
from torch import nn

VGG16 = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(nn.Module):
    """torchvision's ResNet-50 block (stride on the 3x3 convolution, v1.5): 1x1, 3x3, 1x1 with four times the
    width out."""
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        out = planes * self.expansion
        self.conv1, self.bn1 = nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


BasicBlock.expansion = 1


class ResNet(nn.Module):
    def __init__(self, block=BasicBlock, blocks=(2, 2, 2, 2), num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths, layers, inplanes = (64, 128, 256, 512), [], 64
        for i, (planes, count) in enumerate(zip(widths, blocks)):
            stride = 1 if i == 0 else 2
            stage = [block(inplanes, planes, stride)]
            inplanes = planes * block.expansion
            stage += [block(inplanes, planes) for _ in range(count - 1)]
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(inplanes, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def ResNet18(num_classes: int = 1000) -> ResNet:
    return ResNet(BasicBlock, (2, 2, 2, 2), num_classes)


def ResNet34(num_classes: int = 1000) -> ResNet:
    return ResNet(BasicBlock, (3, 4, 6, 3), num_classes)


def ResNet50(num_classes: int = 1000) -> ResNet:
    return ResNet(Bottleneck, (3, 4, 6, 3), num_classes)


class VGG(nn.Module):
    def __init__(self, config=VGG16, num_classes: int = 1000):
        super().__init__()
        layers, channels = [], 3
        for v in config:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(channels, v, 3, padding=1), nn.ReLU(inplace=True)]
                channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
                                        nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class UNet(nn.Module):
    """A small UNet: four levels of two 3x3 convolutions (32 to 256 channels), max-pool down, transposed 2x2
    convolution up, skip connections concatenated; many large-spatial 3x3 stride-1 convolutions, as segmentation
    networks have. Kaiming-initialised like the others."""

    def __init__(self, channels=(32, 64, 128, 256), classes: int = 2):
        super().__init__()

        def twice(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True),
                                 nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True))

        self.down = nn.ModuleList(twice(cin, cout) for cin, cout in zip((3, *channels[:-1]), channels))
        self.pool = nn.MaxPool2d(2)
        ups = list(reversed(channels))
        self.up = nn.ModuleList(nn.ConvTranspose2d(cin, cout, 2, stride=2) for cin, cout in zip(ups, ups[1:]))
        self.merge = nn.ModuleList(twice(2 * cout, cout) for cout in ups[1:])
        self.head = nn.Conv2d(channels[0], classes, 1)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        skips = []
        for i, level in enumerate(self.down):
            x = level(x if i == 0 else self.pool(x))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.head(x)


class Each(nn.Module):
    """Every network on every input of its image side, in one forward: what `megasim.torch.prepare` runs once
    to find all the convolution shapes it must schedule and compile. `sides[i]` is network i's image side
    (None: every input)."""

    def __init__(self, *networks, sides=None):
        super().__init__()
        self.networks = nn.ModuleList(networks)
        self.sides = list(sides) if sides is not None else [None] * len(networks)

    def forward(self, *inputs):
        return [net(x) for net, side in zip(self.networks, self.sides) for x in inputs
                if side is None or x.shape[-1] == side]


NETWORKS = {"resnet18": ResNet18, "vgg16": VGG}  # the GPU tests' two
MORE_NETWORKS = {"resnet34": ResNet34, "resnet50": ResNet50, "unet": UNet}  # the benchmark's other three
