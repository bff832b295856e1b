"""The task-map encoding, the control-block layout and the kernel build description, on the CPU."""
import numpy as np
import pytest

from megasim.contract.resources import gemm_plan
from megasim.gpu.backend import DEFAULT_CONFIG, KERNEL_DIR, KernelConfig, config_header
from megasim.contract import control
from megasim.contract.encoding import SCHEMA_VERSION, WORD, WORD_ORDER, WORDS_PER_TASK, decode, encode, render_cuh
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Op, Partition, WinogradVariant


def test_cuh_matches_python():
    assert (KERNEL_DIR / "encoding.cuh").read_text() == render_cuh()
    text = render_cuh()
    for op in Op:
        assert f"#define MS_OP_{op.name} {int(op)}" in text
    assert f"#define MS_SCHEMA_VERSION {SCHEMA_VERSION}" in text


def test_ctl_layout_cuh_matches_python():
    assert (KERNEL_DIR / "ctl_layout.cuh").read_text() == control.render_cuh()
    assert max(control.Ctl) < control.COUNTERS_AT


def test_default_config_header_is_current():
    committed = (KERNEL_DIR / "ms_config.cuh").read_text()
    assert committed.endswith(config_header(DEFAULT_CONFIG))


def test_word_order_is_explicit_and_aligned():
    assert WORD_ORDER[0] == "task" and WORDS_PER_TASK == 8
    assert len(set(WORD_ORDER)) == WORDS_PER_TASK


@pytest.mark.parametrize("strategy", ["sequential", "interleave", "paper", "random_topo"])
def test_encode_round_trip(tiny_layer, tiny_partition, f43, strategy):
    graph = build_graph(tiny_layer, f43, tiny_partition)
    mp = make(graph, strategy)
    table = encode(graph, mp.order)
    assert table.dtype == np.int32 and table.shape == (graph.num_tasks, WORDS_PER_TASK)
    cols = decode(table)
    t = mp.order
    assert np.array_equal(cols["task"], t)
    assert np.array_equal(cols["op"], graph.op[t])
    assert np.array_equal(cols["group"], graph.group[t])
    assert np.array_equal(cols["index"], graph.index[t])
    assert np.array_equal(table[:, [WORD["wait0"], WORD["wait1"]]], graph.waits_on[t])
    assert np.array_equal(cols["signal"], graph.signals[t])
    assert not cols["reserved"].any()


def test_encode_rejects_bad_order(tiny_layer, tiny_partition, f43):
    graph = build_graph(tiny_layer, f43, tiny_partition)
    with pytest.raises(MegasimError):
        encode(graph, np.arange(graph.num_tasks - 1))
    with pytest.raises(MegasimError):
        encode(graph, np.full(graph.num_tasks, graph.num_tasks))


def test_build_refuses_mismatched_graph():
    layer = Layer(2, 16, 12, 12, 32, "a")
    part = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                     gemm_k_per_task=32, output_channels_per_task=8, threads=128)
    cfg = KernelConfig.of(build_graph(layer, WinogradVariant(4), part))
    other = build_graph(Layer(2, 16, 12, 12, 64, "a"), WinogradVariant(2),
                        Partition(**{**part.to_dict(), "gemm_k_per_task": 64}))
    msg = "; ".join(cfg.mismatches(other))
    assert "layer.k: built 32, graph 64" in msg
    assert "partition.gemm_k_per_task: built 32, graph 64" in msg
    assert "variant.m: built 4, graph 2" in msg
    with pytest.raises(MegasimError, match="compiled for another problem"):
        cfg.check(other)
    cfg.check(build_graph(Layer(2, 16, 12, 12, 32, "renamed"), WinogradVariant(4), part))


def test_gemm_plan_tiles_the_task():
    for part in (Partition(), DEFAULT_CONFIG.partition,
                 Partition(tiles_per_group=64, gemm_k_per_task=128, gemm_mats_per_task=2, threads=256)):
        p = gemm_plan(part)
        assert p.ge * (part.tiles_per_group // p.tm) * (part.gemm_k_per_task // p.tn) == part.threads
        assert part.gemm_mats_per_task % p.ge == 0
    with pytest.raises(MegasimError, match="cannot be tiled"):
        gemm_plan(Partition(tiles_per_group=3, gemm_k_per_task=5, threads=256))


@pytest.mark.parametrize("m", [2, 4, 6])
def test_generated_transforms_evaluate_to_the_matrices(m):
    """Evaluate the generated C expressions in Python on unit vectors: they must give the exact columns."""
    import re

    from megasim.contract.transforms import winograd_matrices
    text = config_header(KernelConfig(DEFAULT_CONFIG.layer, WinogradVariant(m), DEFAULT_CONFIG.partition))
    mats = winograd_matrices(m)
    env = {"__fmul_rn": lambda a, b: a * b, "__fadd_rn": lambda a, b: a + b,
           "__fsub_rn": lambda a, b: a - b, "__fmaf_rn": lambda a, b, c: a * b + c}
    for name, mat in (("ms_g", mats.G), ("ms_bt", mats.BT), ("ms_at", mats.AT)):
        body = text.split(f"void {name}(")[1].split("}")[0]
        rows = dict(re.findall(r"y\[(\d+) \* SO\] = (.*);", body))
        for j in range(len(mat[0])):
            x = [float(i == j) for i in range(len(mat[0]))]
            for r, row in enumerate(mat):
                expr = re.sub(r"x\[(\d+) \* SI\]", r"x[\1]", rows[str(r)])
                expr = re.sub(r"(0x[0-9a-f.p+-]+)f", r"float.fromhex('\1')", expr)
                expr = re.sub(r"(\d+\.\d+)f", r"\1", expr)
                assert eval(expr, dict(env, x=x)) == pytest.approx(float(row[j]), rel=1e-7)
