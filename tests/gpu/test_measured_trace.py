"""Measured timelines on the GPU: the non-fused kernels' trace build, and the file `bench --trace` writes."""
import numpy as np
import pytest

from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant

from ..conftest import device_inputs, run_conv

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

from megasim.app.bench_trace import trace_layer  # noqa: E402
from megasim.app.measured_trace import read_measured  # noqa: E402
from megasim.gpu.megakernel import Workspace  # noqa: E402
from megasim.gpu.nonfused import NonFusedConv  # noqa: E402

SMALL = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                  gemm_k_per_task=32, output_channels_per_task=8, filter_k_per_task=4, threads=128)
LAYER = Layer(2, 32, 16, 16, 64, "trace")


def test_nonfused_trace_covers_every_task_stage_after_stage():
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    x, w = device_inputs(LAYER, 3)
    conv = NonFusedConv(graph)
    want = run_conv(conv, LAYER, x, w)
    y = cp.full_like(want, cp.nan)
    rec = conv.trace_records(x, w, y)
    assert bool((y == want).all())  # the trace build computes what the timed build does
    assert len(rec) == graph.num_tasks and np.array_equal(rec["task"], np.arange(graph.num_tasks))
    assert np.array_equal(rec["op"], graph.op) and (rec["sm"] >= 0).all() and rec["start_us"].min() == 0.0
    assert (rec["ready_us"] == rec["start_us"]).all() and (rec["end_us"] > rec["start_us"]).all()
    for before, after in zip(Op, list(Op)[1:]):  # one stream: a kernel starts after the one before it ends
        assert rec["end_us"][rec["op"] == before].max() <= rec["start_us"][rec["op"] == after].min() + 1e-3


def test_bench_trace_file_reads_back_as_the_run_it_was(tmp_path):
    graph = build_graph(LAYER, WinogradVariant(4), SMALL)
    mapping = make(graph, "paper", dig=4, dgo=8, m=2)
    x, w = device_inputs(LAYER, 4)
    ys = cp.full((LAYER.n, LAYER.h, LAYER.w, LAYER.k), cp.nan, dtype=cp.float32)
    path = trace_layer(tmp_path / "t.json", graph, mapping, "static", Workspace(graph), ([x], [w], [ys]))
    meta, launches = read_measured(path)
    assert meta["mode"] == "static" and meta["order"] == mapping.order.tolist()
    assert meta["header"]["kernel_build"] and set(launches) == {"fused", "nonfused"}
    fused = launches["fused"]
    assert len(fused) == graph.num_tasks and np.array_equal(fused["task"], mapping.order)
    assert (fused["start_us"] <= fused["ready_us"] + 1e-3).all() and (fused["ready_us"] <= fused["end_us"] + 1e-3).all()
