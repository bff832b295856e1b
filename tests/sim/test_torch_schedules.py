"""megasim.torch without torch: eligibility, and where a shape's schedule comes from (files, cache, search)."""
import json
import subprocess
import sys

import pytest

from megasim.app.torch import parallel, schedules as schedules_module
from megasim.app.torch.eligibility import runtime_reason, static_reason
from megasim.app.torch.schedules import Schedule, Schedules, ScheduleWarning
from megasim.contract.errors import MegasimError
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.mapping.io import save_mapping
from megasim.contract.problem import Layer, WinogradVariant
from megasim.gpu.backend import kernel_build_hash

SHAPE = (1, 8, 64, 64, 32)


def test_megasim_torch_imports_without_torch_and_says_what_it_needs():
    code = ("import sys; sys.modules['torch'] = None; import megasim.torch as mt; "
            "print(mt.Schedules().search_budget, mt.static_reason(1, 1, 0, 1, 1)); "
            "exec('try:\\n mt.Conv2d\\nexcept ImportError as e:\\n print(type(e).__name__, e)')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "16 kernel 1x1, not 3x3"
    assert lines[1].startswith("TorchMissing megasim.torch needs PyTorch >= 2.4 (pip install torch)")


@pytest.mark.parametrize("args, why", [
    ((3, 1, 1, 1, 1), None),
    (((3, 3), (1, 1), "same", (1, 1), 1), None),
    ((1, 1, 0, 1, 1), "kernel 1x1, not 3x3"),
    ((3, 2, 1, 1, 1), "stride 2, not 1"),
    ((3, (1, 2), 1, 1, 1), "stride (1, 2), not 1"),
    ((3, 1, 2, 2, 1), "dilation 2, not 1"),
    ((3, 1, 1, 1, 4), "4 groups, not 1"),
    ((3, 1, 0, 1, 1), "padding 0, not 1"),
    ((3, 1, "valid", 1, 1), "padding 'valid', not 1"),
])
def test_static_reasons(args, why):
    assert static_reason(*args) == why


def test_runtime_reasons():
    assert runtime_reason(4, "cuda", "float32", "cuda", "float32") is None
    assert "3-D input" in runtime_reason(3, "cuda", "float32", "cuda", "float32")
    assert "CUDA devices" in runtime_reason(4, "cpu", "float32", "cpu", "float32")
    assert "float32 only" in runtime_reason(4, "cuda", "float16", "cuda", "float16")
    assert static_reason(3, 1, 1, 1, 1, padding_mode="reflect") == "padding_mode 'reflect', not 'zeros'"


@pytest.fixture
def searched(tmp_path):
    """Schedules with a tiny search budget, cached under tmp_path, and the schedule of SHAPE."""
    s = Schedules(cache_dir=str(tmp_path), search_budget=3)
    return s, s.resolve(SHAPE, "h200")


def test_a_search_is_cached_per_shape_gpu_and_kernel_build(searched, tmp_path, monkeypatch):
    s, first = searched
    path = tmp_path / "h200" / "1x8x64x64x32.json"
    doc = json.loads(path.read_text())
    assert doc["kernel_build"] == kernel_build_hash() and tuple(doc["shape"]) == SHAPE
    assert first.variant in (2, 4) and first.source.startswith("search: 3 TPE evaluations")
    graph = first.graph()
    assert graph.num_tasks == len(first.mapping(graph).order)

    def no_search(*a, **k):
        raise AssertionError("searched again")
    monkeypatch.setattr(schedules_module, "search_schedule", no_search)
    again = s.resolve(SHAPE, "h200")
    assert again.to_doc() == first.to_doc()


def test_a_schedule_of_another_kernel_build_is_stale(searched, tmp_path):
    s, _ = searched
    path = tmp_path / "h200" / "1x8x64x64x32.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "kernel_build": "0123456789ab"}))
    with pytest.warns(ScheduleWarning, match="made for kernel build 0123456789ab, these kernels are build .*stale"):
        fresh = s.resolve(SHAPE, "h200")
    assert fresh.kernel_build == kernel_build_hash()
    assert json.loads(path.read_text())["kernel_build"] == kernel_build_hash()


def test_a_mapping_file_directory_comes_first(tmp_path, tiny_partition):
    graph = build_graph(Layer(*SHAPE), WinogradVariant(2), tiny_partition)
    mapping = make(graph, "random_topo", seed=3)
    (tmp_path / "notes.json").write_text("{}")
    save_mapping(tmp_path / "best.json", graph, mapping, mode="persistent")
    got = Schedules(mapping_dir=str(tmp_path), search_budget=0).resolve(SHAPE, "h200")
    assert (got.variant, got.mode, got.partition) == (2, "persistent", tiny_partition)
    assert got.source == f"mapping file {tmp_path / 'best.json'}"
    assert (got.mapping(got.graph()).order == mapping.order).all()


def test_a_search_network_folder_is_read_and_a_missing_folder_or_a_3xtf32_file_says_why_not(tmp_path,
                                                                                            tiny_partition):
    """`search --network --out DIR` writes DIR/<layer>/best.json: those are read too. A folder that does not
    exist, and a file naming a precision megasim.torch does not run, are one-line refusals that name the fix."""
    graph = build_graph(Layer(*SHAPE), WinogradVariant(2), tiny_partition)
    save_mapping(tmp_path / "conv2_x" / "best.json", graph, make(graph, "paper"), mode="persistent")
    got = Schedules(mapping_dir=str(tmp_path), search_budget=0).resolve(SHAPE, "h200")
    assert got.source == f"mapping file {tmp_path / 'conv2_x' / 'best.json'}"
    with pytest.raises(MegasimError, match="not a folder"):
        Schedules(mapping_dir=str(tmp_path / "nowhere"))
    wide = tmp_path / "wide"
    from megasim.contract.resources import warp_partition
    part = warp_partition(Layer(*SHAPE), tiny_partition)
    try:
        warp = build_graph(Layer(*SHAPE), WinogradVariant(4), part)
        save_mapping(wide / "best.json", warp, make(warp, "paper"), gemm="warp", precision="3xtf32")
    except MegasimError:
        pytest.skip("the tiny shape has no 3xTF32 build")
    with pytest.raises(MegasimError, match="runs FP32 builds.*--precision fp32"):
        Schedules(mapping_dir=str(wide), search_budget=0).resolve(SHAPE, "h200")


def test_without_a_search_the_partition_table_and_paper_defaults():
    from megasim.app.catalog import partition_for
    got = Schedules(search_budget=0).resolve(SHAPE, "h200")
    assert (got.variant, got.mode, got.strategy, got.params) == (4, "static", "paper", {})
    assert got.partition == partition_for(Layer(*SHAPE), "h200")


def test_schedule_documents_round_trip_and_refuse_garbage(searched):
    _, first = searched
    assert Schedule.from_doc(first.to_doc()).to_doc() == first.to_doc()
    with pytest.raises(MegasimError, match="not a schema-1 schedule"):
        Schedule.from_doc({"schema": 1, "shape": [1, 2]}, "x.json")


@pytest.mark.slow
def test_a_shape_the_search_space_cannot_hold_gets_the_partition_table(tmp_path):
    """Every point of a shape too large to simulate is refused: the partition table's default runs."""
    got = Schedules(cache_dir=str(tmp_path), search_budget=2, variants=(2,)).resolve((4096, 128, 112, 112, 128),
                                                                                     "h200")
    assert got.source.startswith("partition table of h200, paper defaults: the search space had no legal point")
    assert "thread-block tasks" in got.source  # past the memory or the time a simulation may take


def test_unknown_gpu_is_one_clear_error(tmp_path):
    with pytest.raises(MegasimError, match="unknown GPU 'b300'"):
        Schedules(cache_dir=str(tmp_path), search_budget=2).resolve(SHAPE, "b300")


def test_prepare_shapes_searches_in_worker_processes(tmp_path):
    s = Schedules(cache_dir=str(tmp_path), search_budget=1)
    shapes = [SHAPE, (1, 16, 64, 64, 32), SHAPE]
    made, failed = parallel.prepare_shapes(s, shapes, "h200", workers=2, compile_kernels=False)
    assert set(made) == {SHAPE, (1, 16, 64, 64, 32)} and failed == {}
    assert sorted(p.name for p in (tmp_path / "h200").iterdir()) == ["1x16x64x64x32.json", "1x8x64x64x32.json"]
    _, failed = parallel.prepare_shapes(Schedules(cache_dir=str(tmp_path), gpu="b300"), [SHAPE], "b300", workers=1,
                                        compile_kernels=False)
    assert "unknown GPU" in failed[SHAPE]


def test_the_schedule_search_simulates_no_nonfused_twins(tmp_path, monkeypatch):
    """A fused point's non-fused twin is not simulated (the schedule needs only the build's own time); the
    non-fused builds, points of the space, are, right after the default point."""
    from megasim.app.search import objective
    called = []
    monkeypatch.setattr(objective, "nonfused_us", lambda *a: called.append(a[0].launch) or 1e9)
    got = Schedules(cache_dir=str(tmp_path), search_budget=1).resolve(SHAPE, "h200")
    assert got.source.startswith("search") and called == []
    Schedules(cache_dir=str(tmp_path / "more"), search_budget=6).resolve(SHAPE, "h200")
    assert called and set(called) == {"nonfused"}


def test_a_search_on_a_profile_that_predicts_part_of_the_space_says_so_once(monkeypatch):
    """The stale H100 profile predicts no 3xTF32 build and predates three laws: megasim.torch's search says
    both, in one warning, once per GPU."""
    from megasim.app.calibrate.profile import simulation_model
    monkeypatch.setattr(schedules_module, "_warned_profiles", set())
    gpu, note, _ = simulation_model("h100")
    with pytest.warns(schedules_module.ProfileWarning) as caught:
        schedules_module._warn_profile(gpu.name, note)
        schedules_module._warn_profile(gpu.name, note)
    (warning,) = caught
    text = str(warning.message)
    assert "predicts no 3xtf32 build: picks are FP32 only" in text and "profile fitted before the laws" in text
    gpu, note, _ = simulation_model("h200")
    schedules_module._warn_profile(gpu.name, note)  # the H200's profile is current: nothing to say


@pytest.mark.parametrize("shape", [(1, 2, 3), ("a", 1, 1, 1, 1), None, (1, 2, 3, 4, 0), (1.5, 2, 3, 4, 5)],
                         ids=["four", "text", "none", "zero", "fraction"])
def test_a_malformed_shape_is_one_megasim_error(shape):
    with pytest.raises(MegasimError, match="five positive integers"):
        Schedules(search_budget=0).resolve(shape, "h200")


def test_release_with_nothing_compiled_asks_for_no_gpu_library():
    code = "import sys; sys.modules['cupy'] = None; import megasim.torch as mt; mt.release(); print('released')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "released", done.stderr[-500:]
