"""One protocol, every interpreter: same graph and mapping in, TB_RECORDs covering every task once out."""
import importlib.util
import math
from dataclasses import replace

import numpy as np
import pytest

from megasim.app.catalog import load_gpu
from megasim.app.interpreters import INTERPRETERS, CudaInterpreter, EmulatorInterpreter, SimpyInterpreter
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.interpreter import Interpreter, RunConfig
from megasim.contract.mapping import make
from megasim.contract.problem import Layer, Op, Partition
from megasim.contract.records import TB_RECORD
from megasim.engine.simulate import simulate
from megasim.gpu.winograd import direct_conv

CONSTRUCTOR_ARGS = {"simpy": lambda: {"gpu": load_gpu("h200")}}
GPU_ONLY = {"cuda"}


# Small and ragged, in a partition the CUDA build can tile (tests/gpu/test_kernels.py runs it too).
LAYER = Layer(1, 3, 7, 5, 5, "n1-c3")
PARTITION = Partition(tiles_per_group=16, input_channels_per_task=8, gemm_mats_per_task=4,
                      gemm_k_per_task=32, output_channels_per_task=8, filter_k_per_task=4, threads=128)


@pytest.fixture
def problem(f43):
    graph = build_graph(LAYER, f43, PARTITION)
    return graph, make(graph, "paper", dig=4, dgo=8, m=2)


def make_interpreter(name):
    return INTERPRETERS.get(name)(**CONSTRUCTOR_ARGS.get(name, dict)())


def assert_every_task_once(execution, graph):
    rec = execution.records
    assert rec.dtype == TB_RECORD
    np.testing.assert_array_equal(rec["block"], np.arange(graph.num_tasks))
    np.testing.assert_array_equal(np.sort(rec["task"]), np.arange(graph.num_tasks))
    np.testing.assert_array_equal(rec["op"], graph.op[rec["task"]])


def test_simpy_and_emulator_answer_alike(problem):
    graph, mapping = problem
    simpy = SimpyInterpreter(load_gpu("h200")).run(graph, mapping)
    emulator = EmulatorInterpreter().run(graph, mapping)
    for execution in (simpy, emulator):
        assert_every_task_once(execution, graph)
    np.testing.assert_array_equal(emulator.records["task"], mapping.order)
    assert math.isnan(emulator.time_us) and np.isnan(emulator.records["end_us"]).all()
    assert simpy.time_us > 0 and (simpy.records["end_us"] > simpy.records["ready_us"]).all()


def test_simpy_interpreter_is_the_engine(problem):
    graph, mapping = problem
    gpu = load_gpu("h200")
    result = simulate(graph, mapping, gpu)
    fused = SimpyInterpreter(gpu).run(graph, mapping)
    nonfused = SimpyInterpreter(gpu).run(graph, None, RunConfig(launch="nonfused"))
    assert fused.time_us == result.fused.time_us
    np.testing.assert_array_equal(fused.records, result.fused.records)
    assert nonfused.time_us == result.nonfused.time_us
    assert len(nonfused.launch_us) == len(Op)


def test_emulator_computes_the_convolution(problem):
    graph, mapping = problem
    rng = np.random.default_rng(3)
    x = rng.standard_normal((graph.layer.n, graph.layer.h, graph.layer.w, graph.layer.c))
    w = rng.standard_normal((graph.layer.k, 3, 3, graph.layer.c))
    for launch in ("fused", "nonfused"):
        y = EmulatorInterpreter(np.float64).run(graph, mapping, RunConfig(launch=launch, inputs=((x, w),))).output
        np.testing.assert_allclose(y, direct_conv(x, w), rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.gpu) if n in GPU_ONLY else n
                                  for n in INTERPRETERS.names()])
@pytest.mark.parametrize("launch", ["fused", "nonfused"])
def test_every_interpreter_reports_every_block(name, launch, problem):
    graph, mapping = problem
    interpreter = make_interpreter(name)
    assert isinstance(interpreter, Interpreter)
    execution = interpreter.run(graph, mapping, RunConfig(launch=launch))
    assert execution.interpreter == name and execution.launch == launch
    assert_every_task_once(execution, graph)
    expected = mapping.order if launch == "fused" else np.concatenate([graph.tasks_of(op) for op in Op])
    np.testing.assert_array_equal(execution.records["task"], expected)


def test_single_stage_is_the_engines_alone(problem):
    graph, mapping = problem
    stage = SimpyInterpreter(load_gpu("h200")).run(graph, None, RunConfig(launch="gemm"))
    np.testing.assert_array_equal(stage.records["task"], graph.tasks_of(Op.GEMM))
    for interpreter in (EmulatorInterpreter(), CudaInterpreter()):
        with pytest.raises(MegasimError, match="whole convolutions"):
            interpreter.run(graph, mapping, RunConfig(launch="gemm"))


def test_unknown_launch_lists_the_known_ones():
    with pytest.raises(MegasimError, match="fused, nonfused, filter"):
        RunConfig(launch="megakernel")


def test_cuda_interpreter_builds_without_cupy(problem):
    """The GPU interpreter is part of the CPU package; only running it needs CuPy and a device."""
    graph, mapping = problem
    interpreter = CudaInterpreter(trace=True, graph_capture=True)
    if importlib.util.find_spec("cupy") is None:
        with pytest.raises(MegasimError, match="needs CuPy"):
            interpreter.run(graph, mapping)


@pytest.mark.gpu
def test_cuda_traces_what_the_emulator_computes(problem):
    graph, mapping = problem
    rng = np.random.default_rng(5)
    x = rng.standard_normal((LAYER.n, LAYER.h, LAYER.w, LAYER.c)).astype(np.float32)
    w = rng.standard_normal((LAYER.k, 3, 3, LAYER.c)).astype(np.float32)
    cp = pytest.importorskip("cupy")
    y = cp.full((LAYER.n, LAYER.h, LAYER.w, LAYER.k), cp.nan, dtype=cp.float32)
    config = RunConfig(inputs=((cp.asarray(x), cp.asarray(w), y),), reps=3)
    fused = CudaInterpreter(trace=True).run(graph, mapping, config)
    nonfused = CudaInterpreter(graph_capture=True).run(graph, mapping, replace(config, launch="nonfused"))
    rec = fused.records
    assert (rec["sm"] >= 0).all() and (rec["start_us"] <= rec["end_us"]).all() and fused.time_us > 0
    assert bool((fused.output == nonfused.output).all())
    emulated = EmulatorInterpreter().run(graph, mapping, RunConfig(inputs=((x, w),))).output
    assert np.linalg.norm(cp.asnumpy(fused.output) - emulated) <= 1e-5 * np.linalg.norm(emulated)
