"""The megakernel's DRAM reads, counted by Nsight Compute on the H200, fix the usable L2 that fused times cannot
(`megasim.app.calibrate.fused_dram`, docs/decisions.md, "The usable L2 is pinned at 0.3")."""

import numpy as np
import pytest

from megasim.app.calibrate.fused_dram import USABLE_L2_FRACTION, load_fused_dram, read_errors
from megasim.app.calibrate.profile import load_profile, profile_path
from megasim.app.catalog import load_gpu

from ..conftest import CALIBRATION_RAW

SMALL = ("DenseNet", "ResNet-1", "ResNet-2", "YOLOv3-4")


@pytest.fixture(scope="module")
def h200():
    cases = [c for c in load_fused_dram(CALIBRATION_RAW / "h200_fused_dram.json") if c["layer"] in SMALL]
    return load_profile(profile_path("h200")).apply(load_gpu("h200")), cases


def test_the_reading_matches_the_counters_where_the_whole_l2_does_not(h200):
    """At the pinned 0.3 the model reads what the counters read, to 6%, on four layers from 64 to 256 channels;
    with the whole L2 usable it reads 11-75% less on each."""
    spec, cases = h200
    assert len(cases) == len(SMALL)
    pinned = read_errors(spec.with_model(l2_usable_fraction=USABLE_L2_FRACTION), cases)
    whole = read_errors(spec.with_model(l2_usable_fraction=1.0), cases)
    assert np.abs(pinned).max() < 0.06
    assert (whole < -0.1).all()


def test_the_committed_profile_carries_the_reading():
    assert load_profile(profile_path("h200")).model["l2_usable_fraction"] == USABLE_L2_FRACTION
