"""bench's precision sweep on the device: each warp build of a layer timed in 3xTF32 beside its FP32 twin, on the
same rotated inputs and float64 reference, and judged FP32-accurate by `bench_best.refusal`."""
import pytest

from megasim.app.bench_best import bench_builds, best_fused, build_key, fp32_accuracy, space_runs
from megasim.app.catalog import partition_for
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, WinogradVariant
from megasim.contract.resources import PRECISIONS

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.app.bench import _reference, _score  # noqa: E402
from megasim.gpu.interpreter import CudaInterpreter  # noqa: E402
from megasim.gpu.megakernel import Workspace  # noqa: E402
from megasim.gpu.timing import rotation_inputs  # noqa: E402

LAYER = Layer(2, 64, 14, 12, 64, "tf32x3")  # test_tf32x3's: 3xTF32 is FP32-accurate on it
KEEP = {"fused-warp", "fused-warp+3xtf32", "nonfused-warp-graph", "nonfused-warp-graph+3xtf32"}


def test_3xtf32_twins_are_timed_beside_their_fp32_builds_and_accepted():
    own = partition_for(LAYER, "h200")
    every = {build_key(b, 4) for b in bench_builds(LAYER, own, PRECISIONS)}
    assert KEEP <= every
    xs, wts, ys = rotation_inputs(cp, LAYER, 7)
    ref = _reference(cp, LAYER, xs[0], wts[0])[0]
    graph = build_graph(LAYER, WinogradVariant(4), own)
    timings, checks, parts = space_runs(
        graph, lambda g: make(g, "paper"), RunConfig(inputs=tuple(zip(xs, wts, ys)), reps=20),
        lambda g, **build: CudaInterpreter(workspace=Workspace(g), **build), _score(cp, ref), every - KEEP)
    assert set(timings) == KEEP and all(t["median_us"] > 0 for t in timings.values()), timings
    assert checks["fused-warp+3xtf32"]["rel_err"] != checks["fused-warp"]["rel_err"]  # the tensor cores ran
    entry = {"variant": 4, "timings": timings, "checks": checks, "mapping": {}, "partition": own.to_dict(),
             "gemm_partitions": parts}
    verdicts = fp32_accuracy(entry)
    assert set(verdicts) == {"fused-warp+3xtf32", "nonfused-warp-graph+3xtf32"}
    assert all(v["accepted"] for v in verdicts.values()), (verdicts, checks)
    assert best_fused(entry)["timing"] in KEEP
