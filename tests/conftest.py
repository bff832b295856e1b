"""Shared fixtures: a tiny layer and a tiny GPU, small enough to reason about by hand; where committed data lives."""
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import strategies as st

from megasim.contract.options import declared
from megasim.contract.problem import Layer, Partition, WinogradVariant

REPO = Path(__file__).resolve().parents[1]
# Committed data the tests read: one folder per study (its data, the script that made it, a README),
# the raw calibration measurements, and small subsets cut from studies too big to recompute in CI.
STUDIES = REPO / "docs" / "results"
CALIBRATION_RAW = REPO / "scenarios" / "calibrations" / "raw"
FIXTURES = REPO / "tests" / "fixtures"


def load_study(folder: str, script: str) -> ModuleType:
    """A study's script (docs/results/<folder>/<script>.py): studies live beside their data, not in the package."""
    path = STUDIES / folder / f"{script}.py"
    spec = importlib.util.spec_from_file_location(f"study_{folder}_{script}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_close(actual, expected, rel: float, where: str = "") -> None:
    """`actual` equals `expected` with numbers within `rel`: nested dicts and lists walked, strings, bools and None
    compared exactly. `pytest.approx` refuses a mapping that holds a string (pytest 9), and a record of a run
    holds both its name and its figures."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key in expected:
            assert_close(actual[key], expected[key], rel, f"{where}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rel, f"{where}[{i}]")
    elif isinstance(expected, (int, float)) and not isinstance(expected, bool):
        assert actual == pytest.approx(expected, rel=rel), where
    else:
        assert actual == expected, where


def _gpu_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


# The tests that take minutes (the README's refit) or tens of seconds: run first, so that under `-n` the other
# workers share out the rest beside them instead of waiting at the end for one of them.
LONGEST_FIRST = ("test_the_readme_runs_top_to_bottom_in_an_empty_folder",
                 "test_a_gpu_without_a_spec_gets_one_written_from_the_device_and_its_profile_beside_it")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: getattr(item, "originalname", item.name) not in LONGEST_FIRST)
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with CuPy")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture
def tiny_layer():
    return Layer(n=2, c=8, h=10, w=9, k=8, name="tiny")


@pytest.fixture
def tiny_partition():
    return Partition(tiles_per_group=4, input_channels_per_task=4, gemm_mats_per_task=9,
                     gemm_k_per_task=4, output_channels_per_task=4, filter_k_per_task=2, threads=64)


@pytest.fixture
def f43():
    return WinogradVariant(4)


@pytest.fixture(scope="session")
def drawn_options():
    """`drawn_options(entry, small)`: a hypothesis strategy for a registry entry's options, read from its
    declaration: each integer option takes one of its search values or a small integer from its lowest."""
    def options_of(entry, small: int):
        ints = [o for o in declared(entry.options) if o.type is int and o.search]
        return st.fixed_dictionaries({o.name: st.one_of(st.sampled_from(o.search),
                                                        st.integers(min(o.search), min(o.search) + small))
                                      for o in ints})
    return options_of


def device_inputs(layer, seed: int):
    """A random NHWC input and [K][3][3][C] filters of `layer`, float32 on the GPU (GPU tests only)."""
    import cupy as cp
    import numpy as np
    rng = np.random.default_rng(seed)
    return (cp.asarray(rng.standard_normal((layer.n, layer.h, layer.w, layer.c)).astype(np.float32)),
            cp.asarray(rng.standard_normal((layer.k, 3, 3, layer.c)).astype(np.float32)))


def run_conv(conv, layer, x, w):
    """One run of a FusedConv or NonFusedConv into a NaN-poisoned output, which it returns."""
    import cupy as cp
    y = cp.full((layer.n, layer.h, layer.w, layer.k), cp.nan, dtype=cp.float32)
    conv.run(x, w, y)
    return y
