"""The cuDNN and torch baselines compute the convolution they claim to, and refuse cleanly.

On the GPU every algorithm cuDNN accepts, in both layouts, and torch must
match a float64 direct convolution. Tolerances come from the arithmetic:
the GEMM family sums 9C products in FP32 in some order, so its relative L2
error sits near 1e-7 and 1e-5 is a wide bound; FFT and Winograd transform
the operands and round the transformed values, which costs one to two
orders of magnitude, so they get 1e-4. torch picks among all of them, so it
gets the looser bound. Algorithms cuDNN refuses come back as unsupported
results with a status name, never as exceptions.
"""
import subprocess
import sys

import numpy as np
import pytest

from megasim.gpu import baselines
from megasim.gpu.cudnn import CudnnError, FwdAlgo
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Layer

from megasim.gpu.winograd import direct_conv

from ..conftest import REPO

GEMM_FAMILY = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT"}
LAYERS = [Layer(n=2, c=8, h=10, w=9, k=8, name="tiny"),
          Layer(n=3, c=3, h=13, w=7, k=5, name="c3-ragged"),
          Layer(n=4, c=64, h=14, w=14, k=32, name="resnet-ish")]


def _tolerance(name: str) -> float:
    algo = name.split(":")[-1]
    return 1e-5 if algo in GEMM_FAMILY else 1e-4


@pytest.mark.gpu
@pytest.mark.parametrize("layer", LAYERS, ids=lambda lay: lay.name)
def test_every_supported_baseline_matches_fp64_direct(layer):
    import cupy as cp

    rng = np.random.default_rng(hash(layer.name) % 2**32)
    x = rng.standard_normal((layer.n, layer.h, layer.w, layer.c)).astype(np.float32)
    w = rng.standard_normal((layer.k, 3, 3, layer.c)).astype(np.float32)
    results = baselines.run_baselines(layer, cp.asarray(x), cp.asarray(w), reps=5)
    ref = direct_conv(x, w)

    names = {r["name"] for r in results}
    assert {f"cudnn:{a.name}" for a in FwdAlgo} <= names
    assert {f"cudnn-nhwc:{a.name}" for a in FwdAlgo} <= names
    supported = {r["name"] for r in results if r["supported"]}
    assert {"cudnn:IMPLICIT_GEMM", "cudnn:IMPLICIT_PRECOMP_GEMM"} <= supported
    for r in results:
        print(f"{layer.name:>10} {r['name']:<34} {r['status']:<38} {r['median_us']}")
        if not r["supported"]:
            assert r["status"] and r["output"] is None and r["median_us"] is None
            continue
        out = cp.asnumpy(r["output"])
        assert out.shape == ref.shape
        assert not np.isnan(out).any(), f"{r['name']} left NaN in the poisoned output"
        err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        assert err <= _tolerance(r["name"]), f"{r['name']}: rel L2 error {err:.2e}"
        assert 0 < r["p10_us"] <= r["median_us"] <= r["p90_us"]
        assert r["rotation_sets"] >= 2


@pytest.mark.gpu
def test_float64_reference_agrees_with_numpy(tiny_layer):
    import cupy as cp

    rng = np.random.default_rng(3)
    x = rng.standard_normal((tiny_layer.n, tiny_layer.h, tiny_layer.w, tiny_layer.c))
    w = rng.standard_normal((tiny_layer.k, 3, 3, tiny_layer.c))
    y = cp.asnumpy(baselines.reference_fp64(tiny_layer, cp.asarray(x), cp.asarray(w)))
    assert np.linalg.norm(y - direct_conv(x, w)) / np.linalg.norm(y) < 1e-12


@pytest.mark.gpu
def test_wrong_shapes_are_refused(tiny_layer):
    import cupy as cp

    x = cp.zeros((tiny_layer.n, tiny_layer.c, tiny_layer.h, tiny_layer.w), dtype=cp.float32)
    w = cp.zeros((tiny_layer.k, 3, 3, tiny_layer.c), dtype=cp.float32)
    with pytest.raises(MegasimError, match="wants x NHWC"):
        baselines.run_baselines(tiny_layer, x, w)


def test_fastest_ignores_unsupported_and_filters_by_prefix():
    rs = [{"name": "cudnn:GEMM", "supported": True, "median_us": 30.0},
          {"name": "cudnn:WINOGRAD", "supported": False, "median_us": None},
          {"name": "cudnn-nhwc:GEMM", "supported": True, "median_us": 20.0},
          {"name": "torch", "supported": True, "median_us": 25.0}]
    assert baselines.fastest(rs)["name"] == "cudnn-nhwc:GEMM"
    assert baselines.fastest(rs, "cudnn:")["name"] == "cudnn:GEMM"
    assert baselines.fastest(rs, "nothing") is None


def test_not_supported_family_is_recognised():
    assert CudnnError("cudnnConvolutionForward", 3000, "CUDNN_STATUS_NOT_SUPPORTED").not_supported
    assert not CudnnError("cudnnConvolutionForward", 2000, "CUDNN_STATUS_BAD_PARAM").not_supported


def test_without_cupy_reports_no_gpu(monkeypatch):
    monkeypatch.setattr(baselines, "cp", None)
    with pytest.raises(MegasimError, match="no GPU"):
        baselines.run_baselines(LAYERS[0], None, None)


def test_modules_import_without_cupy_or_torch():
    code = ("import sys; sys.modules['cupy'] = None; sys.modules['torch'] = None\n"
            "from megasim.gpu import baselines, cudnn\n"
            "from megasim.contract.problem import Layer\n"
            "from megasim.contract.errors import MegasimError\n"
            "try:\n"
            "    baselines.run_baselines(Layer(1, 1, 1, 1, 1), None, None)\n"
            "except MegasimError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no GPU")
