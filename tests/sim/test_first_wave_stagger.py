"""A kernel's first wave ends in arrival order on every SM, so its last, partial wave spreads one block per SM
(the law `first_wave_stagger`, read from the per-block traces by `megasim.app.calibrate.end_order`)."""
import numpy as np
import pytest

from megasim.app.calibrate.end_order import end_ranks, stagger_reading
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.catalog import load_gpu, load_layer, partition_for
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import WinogradVariant
from megasim.engine.laws.first_wave_stagger import staggered as first_wave_stagger
from megasim.engine.interpreter import SimpyInterpreter

from ..conftest import CALIBRATION_RAW


class _Kernel:
    def __init__(self, n, check_deps=False):
        self.tasks = np.arange(n)
        self.check_deps = check_deps


def test_factors_rank_the_first_wave_and_leave_the_rest():
    f = first_wave_stagger([_Kernel(10), _Kernel(3)], [3, 1], sm_count=2, stagger=np.full(10, 0.1))
    assert f[:6] == pytest.approx([0.9, 0.9, 1.0, 1.0, 1.1, 1.1])
    assert f[6:] == pytest.approx(np.ones(7))
    assert first_wave_stagger([_Kernel(4)], [3], 2, np.zeros(4)) is None


def test_only_the_staggered_types_of_a_launch_without_waits_are_ranked():
    """A block keeps its whole work unless its type is staggered, and a megakernel's first wave (its blocks poll
    counters, so they start work as their parents end, not together) is not staggered at all."""
    stagger = np.array([0.1, 0.0, 0.1, 0.0, 0.1, 0.0])
    f = first_wave_stagger([_Kernel(6)], [3], 2, stagger)
    assert f == pytest.approx([0.9, 1.0, 1.0, 1.0, 1.1, 1.0])
    assert first_wave_stagger([_Kernel(6, check_deps=True)], [3], 2, stagger) == pytest.approx(np.ones(6))


def _resnet4_gemm(stagger: dict):
    layer = load_layer("ResNet-4")
    graph = build_graph(layer, WinogradVariant(4), partition_for(layer))
    gpu = load_profile(profile_path("h200")).apply(load_gpu("h200")).with_model(first_wave_stagger={"stagger": stagger})
    return SimpyInterpreter(gpu).run(graph, None, RunConfig(launch="gemm")).records


def _later_per_sm(rec) -> np.ndarray:
    later = np.argsort(rec["start_us"], kind="stable")[396:]
    return np.bincount(rec["sm"][later], minlength=132)


def test_staggered_first_waves_end_in_order_and_the_tail_spreads():
    """ResNet-4's non-fused GEMM under the H200 profile (resident sharing, 3.4% work jitter): 576 blocks,
    396 slots. Unstaggered, the jitter hands the freed slots out in a random SM order and the last 180 blocks
    leave SMs idle and stack three deep on others; staggered, every SM gets one or two, as the traced launch
    shows, and the launch is shorter."""
    flat, staggered = _resnet4_gemm({}), _resnet4_gemm({"gemm": 0.12})
    assert (_later_per_sm(flat) == 0).sum() >= 10
    assert (_later_per_sm(staggered) == 0).sum() == 0 and (_later_per_sm(staggered) == 3).sum() <= 2
    span = lambda rec: rec["end_us"].max() - rec["start_us"].min()  # noqa: E731
    assert span(staggered) < 0.95 * span(flat)
    ranks, wave = end_ranks(staggered)
    assert wave == 396 and ranks[0] < ranks[1] < ranks[2]
    other = _resnet4_gemm({"input_transform": 0.12})
    assert span(other) == span(flat)


def test_the_reading_is_half_the_traced_spread():
    meta, traces = load_sample(CALIBRATION_RAW / "h100_trace_sample.npz")
    ranks, _ = end_ranks(traces["ResNet-4"]["nonfused"])
    assert ranks[0] < ranks[1] < ranks[2]
    assert 0.03 <= stagger_reading(meta, traces) <= 0.15
