"""megasim.torch runs whole builds: a mapping file naming a non-fused or a warp-body build runs that build
(against torch fp32, TF32 off), and a layer whose schedule chose torch's convolution runs torch's, in eager
mode and inside a compiled graph."""
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import megasim.torch as mtorch  # noqa: E402
from megasim.app.catalog import partition_for  # noqa: E402
from megasim.contract.build import Build, build_partition  # noqa: E402
from megasim.contract.graph import build_graph  # noqa: E402
from megasim.contract.mapping import make  # noqa: E402
from megasim.contract.mapping.io import save_mapping  # noqa: E402
from megasim.contract.problem import Layer, WinogradVariant  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")]

N, C, H, W, K = 2, 64, 28, 28, 128
LAYER_TOLERANCE = 2e-5


@pytest.fixture(autouse=True)
def fp32():
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def mapping_dir(tmp_path, build: Build):
    layer = Layer(N, C, H, W, K)
    part = build_partition(layer, build, partition_for(layer, "h200"))
    graph = build_graph(layer, WinogradVariant(build.variant), part)
    save_mapping(tmp_path / "best.json", graph, make(graph, "paper"), mode=build.mode, launch=build.launch,
                 gemm=build.gemm)
    return str(tmp_path)


def conv_with(schedules):
    torch.manual_seed(0)
    conv = mtorch.Conv2d(C, K, 3, padding=1, bias=False, schedules=schedules).cuda()
    x = torch.randn(N, C, H, W, device="cuda")
    return conv, x


@pytest.mark.parametrize("build", [Build("nonfused", 4, "static", "warp"), Build("fused", 4, "persistent", "warp"),
                                   Build("nonfused", 2, "static", "generic")], ids=lambda b: b.label)
def test_a_mapping_files_build_runs_as_named(tmp_path, build):
    conv, x = conv_with(mtorch.Schedules(mapping_dir=mapping_dir(tmp_path, build), backend="megasim"))
    with torch.no_grad():
        y = conv(x)
        ref = F.conv2d(x, conv.weight, padding=1)
    plan = conv.shape_plans[tuple(x.shape)]
    assert (plan.schedule.launch, plan.schedule.gemm, plan.schedule.mode) == (build.launch, build.gemm, build.mode)
    assert type(plan.conv).__name__ == ("FusedConv" if build.launch == "fused" else "NonFusedConv")
    assert rel(y, ref) < LAYER_TOLERANCE


def test_a_layer_that_chose_torch_runs_torchs_convolution(tmp_path):
    conv, x = conv_with(mtorch.Schedules(cache_dir=str(tmp_path), backend="torch"))
    with torch.no_grad():
        y = conv(x)
        compiled = torch.compile(conv)(x)
    plan = conv.shape_plans[tuple(x.shape)]
    assert plan.runs_torch and plan.conv is None and "forced" in plan.schedule.reason
    ref = F.conv2d(x, conv.weight, padding=1)
    assert rel(y, ref) < 1e-6 and rel(compiled, ref) < 1e-6


def test_auto_measures_torch_once_and_reports_the_choice(tmp_path):
    model = torch.nn.Sequential(torch.nn.Conv2d(C, K, 3, padding=1, bias=False)).cuda()
    report = mtorch.convert(model, mtorch.Schedules(cache_dir=str(tmp_path)))
    x = torch.randn(N, C, H, W, device="cuda")
    with torch.no_grad():
        model(x)
    (run,) = report.runs()
    assert run["torch_us"] > 0 and run["predicted_us"] > 0 and run["backend"] in ("megasim", "torch")
    assert (run["backend"] == "torch") == (run["torch_us"] < run["predicted_us"])
    assert run["why"] and "per input shape, what runs and why" in str(report)


@pytest.mark.parametrize("build", [Build("fused", 4, "static", "warp"), Build("nonfused", 2, "static", "generic")],
                         ids=lambda b: b.label)
def test_the_eager_path_gives_the_operators_bits_in_either_layout_without_a_warning(tmp_path, build):
    """Eager calls with no gradient skip the dispatcher (`ops.run` through the plan's driver-bound launch);
    calls that record a gradient go through the custom op. Both run the same build, so the bits agree, the
    output keeps the input's memory format, and once a shape is planned the hot path warns about nothing."""
    conv, x = conv_with(mtorch.Schedules(mapping_dir=mapping_dir(tmp_path, build), backend="megasim"))
    conv.bias = torch.nn.Parameter(torch.randn(K, device="cuda"))
    x_cl = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        conv(x), conv(x_cl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            eager, eager_cl = conv(x), conv(x_cl)
    through_op = conv(x.clone().requires_grad_())
    assert torch.equal(eager, through_op.detach()) and torch.equal(eager_cl, through_op.detach())
    assert eager.is_contiguous() and eager_cl.is_contiguous(memory_format=torch.channels_last)
    assert rel(eager, F.conv2d(x, conv.weight, conv.bias, padding=1)) < LAYER_TOLERANCE


@pytest.mark.parametrize("build", [Build("fused", 4, "static", "warp"), Build("nonfused", 4, "static", "warp")],
                         ids=lambda b: b.label)
def test_eager_graph_launches_follow_every_calls_pointers(tmp_path, build):
    """An eager call is one CUDA graph launch whose nodes keep the last call's pointers: two layers of one
    shape (one plan, two sets of kept filters) on two inputs, taking turns, each give what the custom op's
    kernel-by-kernel launch gives for the same layer and input."""
    schedules = mtorch.Schedules(mapping_dir=mapping_dir(tmp_path, build), backend="megasim")
    a, x1 = conv_with(schedules)
    b = mtorch.Conv2d(C, K, 3, padding=1, bias=False, schedules=schedules).cuda()
    x2 = torch.randn_like(x1)
    with torch.no_grad():
        a(x1), b(x1)
        assert a.shape_plans[tuple(x1.shape)] is b.shape_plans[tuple(x1.shape)]
        eager = [(conv, x, conv(x)) for _ in range(2) for conv in (a, b) for x in (x1, x2)]
    for conv, x, y in eager:
        assert torch.equal(y, conv(x.clone().requires_grad_()).detach())
    assert not torch.equal(eager[0][2], eager[1][2]) and not torch.equal(eager[0][2], eager[2][2])


def test_release_retires_the_plans_eager_calls_hold(tmp_path):
    conv, x = conv_with(mtorch.Schedules(mapping_dir=mapping_dir(tmp_path, Build("fused", 4, "static", "warp")),
                                         backend="megasim"))
    with torch.no_grad():
        before = conv(x)
        old = conv.shape_plans[tuple(x.shape)]
        mtorch.release()
        after = conv(x)
    assert old.released and old.conv is None
    assert conv.shape_plans[tuple(x.shape)] is not old and torch.equal(before, after)


def test_eager_calls_run_the_side_that_won_the_eager_race(tmp_path):
    """In "auto", eager calls are raced once per plan and layout (`eager.race`); the report carries the verdict
    and the layer runs the side it names."""
    model = torch.nn.Sequential(torch.nn.Conv2d(C, K, 3, padding=1, bias=False)).cuda()
    report = mtorch.convert(model, mtorch.Schedules(cache_dir=str(tmp_path)))
    x = torch.randn(N, C, H, W, device="cuda")
    with torch.no_grad():
        y = model(x)
    (run,) = report.runs()
    plan = model[0].shape_plans[tuple(x.shape)]
    if plan.runs_torch:
        assert run["eager"] == {}
        return
    verdict = run["eager"]["nchw"]
    assert verdict["megasim_us"] > 0 and verdict["torch_us"] > 0 and "eager nchw" in run["runs"]
    assert (verdict["runs"] == "torch") == (verdict["torch_us"] < verdict["megasim_us"])
    ran = next(iter(model[0]._eager.values()))
    assert (ran is None) == (verdict["runs"] == "torch")
    assert rel(y, F.conv2d(x, model[0].weight, padding=1)) < LAYER_TOLERANCE
