"""megasim.torch's PyTorch side on the CPU: convert, fallback warnings, the op's fake, autograd, compile.

The megakernel itself needs a GPU (tests/gpu/test_torch.py). Here the op gets a CPU stand-in kernel
(torch's own convolution, in the layout the real one returns) and the layers are told the CPU is fine,
so everything around the kernel runs: the layout handling, the fake implementation torch.compile traces
with, the autograd Function's backward, the filter copy's refresh. Skipped without torch.
"""
import time
import warnings

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import megasim.torch as mtorch  # noqa: E402
from megasim.app.torch import conv as conv_module, ops, plans, prepare as prepare_module  # noqa: E402


class Mixed(nn.Module):
    """One of each: eligible with and without bias, stride 2, 1x1, grouped, dilated, a Conv2d subclass."""

    class MyConv(nn.Conv2d):
        pass

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 8, 3, padding=1)
        self.b = nn.Sequential(nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, bias=False))
        self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.point = nn.Conv2d(8, 8, 1)
        self.grouped = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.dilated = nn.Conv2d(8, 8, 3, padding=2, dilation=2)
        self.custom = Mixed.MyConv(8, 8, 3, padding=1)

    def forward(self, x):
        x = self.b(self.a(x))
        x = self.custom(self.dilated(self.grouped(self.point(x))))
        return self.down(x)


@pytest.fixture
def cpu_kernel(monkeypatch):
    """The op runs torch's convolution on the CPU, and layers accept CPU tensors."""
    lib = torch.library.Library("megasim", "IMPL")

    def stand_in(x, w_krsc, schedules):
        y = F.conv2d(x.contiguous(), w_krsc.permute(0, 3, 1, 2).contiguous(), padding=1)
        return y.contiguous(memory_format=torch.channels_last) if ops.is_channels_last(x) else y

    lib.impl("winograd_conv3x3", stand_in, "CPU")
    monkeypatch.setattr(conv_module, "runtime_reason", lambda *a: None)
    monkeypatch.setattr(plans, "plan_for", lambda *a, **k: SimpleNamespace(runs_torch=False, released=False, eager={}))
    yield
    lib._destroy()


def test_convert_swaps_only_the_eligible_layers():
    model = Mixed()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # swapped layers are eligible: constructing them warns of nothing
        report = mtorch.convert(model)
    assert [name for name, _ in report.swapped] == ["a", "b.1"]
    why = {name: reason for name, _, reason in report.kept}
    assert why == {"down": "stride 2, not 1", "point": "kernel 1x1, not 3x3", "grouped": "2 groups, not 1",
                   "dilated": "dilation 2, not 1", "custom": "a MyConv, not a plain nn.Conv2d"}
    assert isinstance(model.a, mtorch.Conv2d) and type(model.down) is nn.Conv2d
    assert "2 convolution(s) swapped" in str(report)


def test_on_a_cpu_convert_and_prepare_say_plainly_that_nothing_runs_on_the_megakernel(monkeypatch):
    """Without a CUDA device the report says the swapped layers run torch's convolution, and `prepare` warns
    why it prepared nothing instead of returning an empty result without a word."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    model = Mixed()
    report = mtorch.convert(model)
    assert "no CUDA device here: every swapped layer runs torch's convolution" in str(report)
    with pytest.warns(mtorch.FallbackWarning, match="prepare: no call .* can run on the megakernel.*CUDA"):
        done = mtorch.prepare(model, torch.randn(2, 4, 9, 7))
    assert done["shapes"] == {}


def test_converted_layers_keep_the_parameters_and_state_dict():
    model = Mixed()
    before = {k: v for k, v in model.state_dict().items()}
    weight = model.a.weight
    mtorch.convert(model)
    assert model.a.weight is weight
    assert list(model.state_dict()) == list(before)


def test_cpu_call_falls_back_with_one_warning_per_layer():
    model = Mixed()
    mtorch.convert(model)
    reference = Mixed()
    reference.load_state_dict(model.state_dict())
    x = torch.randn(2, 4, 9, 7)
    with pytest.warns(mtorch.FallbackWarning) as caught:
        y = model(x)
        model(x)
    messages = [str(w.message) for w in caught if issubclass(w.category, mtorch.FallbackWarning)]
    assert len(messages) == 2 and all("megakernel runs on CUDA devices" in m for m in messages)
    assert "a: Conv2d(4, 8" in messages[0] and "b.1: Conv2d(8, 8" in messages[1]
    assert torch.equal(y, reference(x))


def test_an_ineligible_layer_warns_once_when_built():
    with pytest.warns(mtorch.FallbackWarning, match="stride 2, not 1"):
        layer = mtorch.Conv2d(3, 4, 3, stride=2, padding=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer(torch.randn(1, 3, 8, 8))


@pytest.mark.parametrize("channels_last", [False, True])
def test_fake_gives_the_output_layout_of_the_input(channels_last):
    x = torch.empty(2, 5, 9, 7, device="meta")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.ops.megasim.winograd_conv3x3(x, torch.empty(6, 3, 3, 5, device="meta"), "k")
    assert y.shape == (2, 6, 9, 7)
    assert y.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


@pytest.mark.parametrize("channels_last", [False, True])
def test_forward_and_backward_match_torch(cpu_kernel, channels_last):
    layer = mtorch.Conv2d(5, 6, 3, padding=1)
    ref = nn.Conv2d(5, 6, 3, padding=1)
    ref.load_state_dict(layer.state_dict())
    x = torch.randn(2, 5, 9, 7, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    if channels_last:
        x2, xr2 = x.contiguous(memory_format=torch.channels_last), xr.contiguous(memory_format=torch.channels_last)
    else:
        x2, xr2 = x, xr
    y, yr = layer(x2), ref(xr2)
    assert torch.allclose(y, yr, atol=1e-5)
    assert y.is_contiguous(memory_format=torch.channels_last) == channels_last
    g = torch.randn_like(y)
    y.backward(g)
    yr.backward(g)
    assert torch.allclose(x.grad, xr.grad, atol=1e-5)
    assert torch.allclose(layer.weight.grad, ref.weight.grad, atol=1e-4)
    assert torch.allclose(layer.bias.grad, ref.bias.grad, atol=1e-4)


def test_filter_copy_follows_in_place_weight_updates(cpu_kernel):
    layer = mtorch.Conv2d(3, 4, 3, padding=1, bias=False)
    x = torch.randn(1, 3, 6, 6)
    layer(x)
    with torch.no_grad():
        layer.weight.mul_(2)
    assert torch.allclose(layer(x), F.conv2d(x, layer.weight, padding=1), atol=1e-5)


def test_compiled_converted_model_runs_in_one_graph(cpu_kernel):
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).eval()
    reference = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).eval()
    reference.load_state_dict(model.state_dict())
    mtorch.convert(model)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        assert torch.allclose(compiled(x), reference(x), atol=1e-5)


def test_prepare_asks_for_every_eligible_shape_once(cpu_kernel, monkeypatch):
    asked = []

    def record(schedules, shapes, gpu, workers=None, compile_kernels=True, layouts=("nhwc",)):
        asked.append((sorted(shapes), gpu))
        assert all(layouts[s] == {"nchw"} for s in shapes)  # the inputs are NCHW: only NCHW builds are compiled
        return {}, {}

    monkeypatch.setattr(prepare_module, "prepare_shapes", record)
    monkeypatch.setattr(plans, "device_gpu", lambda device, schedules: "h200")
    model = Mixed()
    mtorch.convert(model)

    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, a, b):
            return self.net(a), self.net(b)

    info = mtorch.prepare(Both(), torch.randn(2, 4, 9, 7), torch.randn(1, 4, 5, 5))
    assert asked == [(sorted([(2, 4, 9, 7, 8), (2, 8, 9, 7, 8), (1, 4, 5, 5, 8), (1, 8, 5, 5, 8)]), "h200")]
    assert info["failed"] == {} and set(info["seconds"]) == {"shapes", "schedules_and_compiles", "plans"}
    assert type(model).forward is Mixed.forward and "forward" not in vars(model.a)  # the recording is undone


def test_the_eager_race_runs_once_per_plan_and_layout_and_the_faster_side_wins():
    from megasim.app.torch import eager
    plan = SimpleNamespace(eager={})
    calls = {"ours": 0, "theirs": 0}

    def ours():
        calls["ours"] += 1
        time.sleep(0.002)

    def theirs():
        calls["theirs"] += 1

    x = torch.randn(1, 4, 5, 5)
    verdict = eager.race(plan, x, ours, theirs, sync=lambda: None)
    assert verdict.layout == "nchw" and verdict.runs_torch and verdict.megasim_us > verdict.torch_us > 0
    assert "torch's convolution" in verdict.describe()
    again = eager.race(plan, x, ours, theirs, sync=lambda: None)
    assert again is verdict and calls["ours"] == eager.CALLS + eager.WARMUP
    cl = eager.race(plan, x.contiguous(memory_format=torch.channels_last), theirs, ours, sync=lambda: None)
    assert cl.layout == "channels_last" and not cl.runs_torch and set(plan.eager) == {"nchw", "channels_last"}


def test_settle_keeps_torchs_convolutions_where_the_whole_forward_is_faster(monkeypatch):
    """A layer whose build won its race alone is handed back to torch when the forward is faster that way."""
    model = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.ReLU())
    mtorch.convert(model)
    layer, x = model[0], torch.randn(1, 4, 6, 6)
    at = conv_module.eager_key(x)
    plan = SimpleNamespace(released=False)
    layer._eager[at] = plan

    def slow_build(self, plan, x):
        time.sleep(0.05)  # far above a CPU convolution of this size, even on a busy machine
        return F.conv2d(x, self.weight, padding=1)

    monkeypatch.setattr(conv_module.Conv2d, "_run_build", slow_build)
    result = mtorch.settle(model, x, reps=3, sync=lambda: None)
    assert result["kept"] == "torch" and result["on_builds"] == 0 and result["megasim_ms"] > result["torch_ms"]
    assert layer.plain and layer.settled == result  # handed back whole: nn.Conv2d's forward, no dispatch
    calls = []
    monkeypatch.setattr(conv_module.Conv2d, "_eager_plan", lambda self, x, at: calls.append(at))
    model(torch.randn(2, 4, 5, 5))  # another shape, too, goes straight to torch's convolution
    assert not calls
    monkeypatch.setattr(conv_module.Conv2d, "_run_build", lambda self, plan, x: F.conv2d(x, self.weight, padding=1))
    layer._eager[at] = plan
    assert mtorch.settle(model, x, reps=3, sync=lambda: None)["layers"] == 1


def test_settle_tries_each_layer_on_its_cheaper_host_side(monkeypatch):
    """Layer a won its race alone but costs more host time than torch; layer b lost its race but costs less:
    the host-side choice (a on torch, b on its build) is timed too, and kept when it is the fastest."""
    from megasim.app.torch.eager import Verdict
    model = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.Conv2d(4, 4, 3, padding=1, bias=False))
    mtorch.convert(model)
    x = torch.randn(1, 4, 6, 6)
    at = conv_module.eager_key(x)
    a, b = model[0], model[1]
    plan_a = SimpleNamespace(released=False, eager={"nchw": Verdict("nchw", 10.0, 20.0, 30.0, 5.0)})
    plan_b = SimpleNamespace(released=False, eager={"nchw": Verdict("nchw", 20.0, 10.0, 5.0, 30.0)})
    a._eager[at], b._eager[at] = plan_a, None
    a.shape_plans[tuple(x.shape)], b.shape_plans[tuple(x.shape)] = plan_a, plan_b

    def build(self, plan, x):
        time.sleep(0.03 if plan is plan_a else 0.0)
        return F.conv2d(x, self.weight, padding=1)

    real = nn.Conv2d._conv_forward

    def torch_side(self, x, weight, bias):
        time.sleep(0.03 if self is b else 0.0)
        return real(self, x, weight, bias)

    monkeypatch.setattr(conv_module.Conv2d, "_run_build", build)
    monkeypatch.setattr(nn.Conv2d, "_conv_forward", torch_side)
    result = mtorch.settle(model, x, reps=3, sync=lambda: None)
    assert result["kept"] == "host" and result["host_ms"] < min(result["megasim_ms"], result["torch_ms"])
    assert a._eager[at] is None and b._eager[at] is plan_b and result["on_builds"] == 1
    assert not a.plain and not b.plain
