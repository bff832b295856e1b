"""megasim.torch on the GPU: converted ResNet-18 and VGG-16 against torch fp32 (TF32 off), channels_last,
torch.compile, CUDA graph capture, autograd and the fallback.

The networks are torchvision's definitions written out (docs/results/torch_h200/models.py) with random
weights, in eval mode, one 224 x 224 image: the shapes of the benchmark's batch 1, so a run after the
benchmark's preparation finds every schedule and kernel already made. Each shape's schedule comes from
the default `Schedules()` (the disk cache, else a small simulator search); `prepare` makes them all and
compiles them in parallel first.
"""
import copy
import warnings

import pytest

from ..conftest import load_study

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import megasim.torch as mtorch  # noqa: E402
from megasim.gpu.launch import GraphLaunch  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")]

models = load_study("torch_h200", "models")
TOLERANCE = 1e-4  # relative L2 error of the network's output against torch fp32
LAYER_TOLERANCE = 2e-5  # one F(4x4) layer: about 5e-6 (docs/gpu.md)
IMAGE = 224


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


@pytest.fixture(scope="module", autouse=True)
def fp32():
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


@pytest.fixture(scope="module")
def nets():
    """{name: (converted, reference, report)}, the input, and what `prepare` did for both networks."""
    torch.manual_seed(0)
    built = {}
    for name, make in models.NETWORKS.items():
        reference = make().cuda().eval()
        converted = copy.deepcopy(reference)
        built[name] = (converted, reference, mtorch.convert(converted))
    x = torch.randn(1, 3, IMAGE, IMAGE, device="cuda")
    info = mtorch.prepare(models.Each(*(c for c, _, _ in built.values())), x)
    return built, x, info


@pytest.mark.parametrize("name", ["resnet18", "vgg16"])
def test_converted_network_matches_torch_fp32(nets, name, monkeypatch):
    built, x, info = nets
    converted, reference, report = built[name]
    assert info["failed"] == {}
    with torch.no_grad():
        converted(x)  # the first eager call races each plan's build against torch's convolution (eager.race)
    launched, launch = [], GraphLaunch.launch

    def counted(bound, *args, **kwargs):
        launched.append(bound)
        return launch(bound, *args, **kwargs)

    monkeypatch.setattr(GraphLaunch, "launch", counted)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", mtorch.FallbackWarning)
        y, want = converted(x), reference(x)
    runs = report.runs()
    assert len(runs) == len(report.swapped) == 13  # every swapped layer has a plan for this shape
    ours = [r for r in runs if r["backend"] == "megasim" and r["eager"]["nchw"]["runs"] == "megasim"]
    assert len(launched) == len(ours)  # each layer whose build won launched it, once; the rest ran torch's
    assert all((r["backend"] == "torch") == (r["torch_us"] < r["predicted_us"]) for r in runs)
    assert rel(y, want) < TOLERANCE


def test_convert_swaps_the_stride_1_3x3_layers_only(nets):
    _, _, report = nets[0]["resnet18"]
    assert len(report.swapped) == 13  # layer1: 4; layer2..4: 3 each (their first conv has stride 2)
    kept = {name: why for name, _, why in report.kept}
    assert kept["conv1"] == "kernel 7x7, not 3x3"
    assert {kept[f"layer{i}.0.conv1"] for i in (2, 3, 4)} == {"stride 2, not 1"}
    assert {kept[f"layer{i}.0.downsample.0"] for i in (2, 3, 4)} == {"kernel 1x1, not 3x3"}
    assert len(kept) == 7
    _, _, vgg = nets[0]["vgg16"]
    assert len(vgg.swapped) == 13 and vgg.kept == []


def test_channels_last_in_and_out(nets):
    built, x, _ = nets
    converted, reference, _ = built["resnet18"]
    layer = mtorch.Conv2d.from_conv(converted.layer1[0].conv1, mtorch.Schedules(backend="megasim"))
    feats = torch.randn(1, 64, 56, 56, device="cuda")
    with torch.no_grad():
        nchw = layer(feats)
        nhwc = layer(feats.contiguous(memory_format=torch.channels_last))
        want = F.conv2d(feats, layer.weight, padding=1)
        whole = converted(x.contiguous(memory_format=torch.channels_last))
        whole_want = reference(x)
    assert nchw.is_contiguous() and rel(nchw, want) < LAYER_TOLERANCE
    assert nhwc.is_contiguous(memory_format=torch.channels_last) and not nhwc.is_contiguous()
    assert torch.equal(nhwc, nchw)  # the same kernel on the same numbers, only the layout differs
    assert rel(whole, whole_want) < TOLERANCE


def test_compiled_graph_holds_the_custom_op(nets):
    converted = nets[0]["resnet18"][0]
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    feats = torch.randn(1, 64, 56, 56, device="cuda")
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(converted.layer1, backend=record, fullgraph=True)(feats)
    calls = [node for module in graphs[0].modules() if hasattr(module, "graph") for node in module.graph.nodes
             if "winograd_conv3x3" in str(node.target)]
    assert len(graphs) == 1 and len(calls) == 4  # one graph, the four convolutions of layer1 in it


def test_torch_compile_of_a_converted_block_matches(nets):
    converted, reference, _ = nets[0]["resnet18"]
    feats = torch.randn(1, 64, 56, 56, device="cuda")
    torch._dynamo.reset()
    compiled = torch.compile(converted.layer1, fullgraph=True)
    with torch.no_grad():
        assert rel(compiled(feats), reference.layer1(feats)) < TOLERANCE


def test_cuda_graph_capture_replays_the_op_on_new_data(nets):
    layer = mtorch.Conv2d(64, 64, 3, padding=1).cuda()  # its shape's plan was made for ResNet's layer1
    static_x = torch.randn(1, 64, 56, 56, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            layer(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_y = layer(static_x)
    fresh = torch.randn_like(static_x)
    static_x.copy_(fresh)
    with torch.no_grad():
        layer.weight.mul_(0.5)  # the graph recomputes the filters' layout, so it sees this too
    graph.replay()
    torch.cuda.synchronize()
    assert rel(static_y, F.conv2d(fresh, layer.weight, layer.bias, padding=1)) < LAYER_TOLERANCE


def test_backward_is_torchs_convolution_backward(nets):
    layer = mtorch.Conv2d(64, 64, 3, padding=1).cuda()
    twin = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
    twin.load_state_dict(layer.state_dict())
    x = torch.randn(1, 64, 56, 56, device="cuda", requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    grad = torch.randn(1, 64, 56, 56, device="cuda")
    layer(x).backward(grad)
    twin(x2).backward(grad)
    assert torch.allclose(x.grad, x2.grad, rtol=1e-5, atol=1e-5)
    assert torch.allclose(layer.weight.grad, twin.weight.grad, rtol=1e-4, atol=1e-4)


def test_float64_falls_back_with_one_warning():
    layer = mtorch.Conv2d(8, 8, 3, padding=1).cuda().double()
    x = torch.randn(2, 8, 20, 20, device="cuda", dtype=torch.float64)
    with pytest.warns(mtorch.FallbackWarning, match="float32 only") as caught:
        y = layer(x)
        layer(x)
    assert len([w for w in caught if issubclass(w.category, mtorch.FallbackWarning)]) == 1
    assert torch.equal(y, F.conv2d(x, layer.weight, layer.bias, padding=1))


def test_settle_keeps_the_faster_forward_and_the_output(nets):
    """`settle` times the forward with the layers' eager choices, on their cheaper host sides and as torch's own
    network, keeps the fastest, and the network still matches torch."""
    built, x, _ = nets
    converted, reference, report = built["resnet18"]
    result = mtorch.settle(converted, x, reps=5)
    timed = {k: result[f"{k}_ms"] for k in ("megasim", "torch", "host") if result[f"{k}_ms"] is not None}
    assert result["layers"] == 13 and result["kept"] == min(timed, key=timed.get)
    assert any(r["settled"] == result for r in report.runs())
    layers = [m for m in converted.modules() if isinstance(m, mtorch.Conv2d)]
    assert all(m.plain == (result["kept"] == "torch") for m in layers)
    with torch.no_grad():
        assert rel(converted(x), reference(x)) < TOLERANCE
    for m in layers:
        m.plain = False  # the other tests' layers decide per call again
