"""megasim.torch's decision without torch or a GPU: each shape's schedule is a whole build of the decision space,
and the layer runs torch's convolution where torch's measured time beats the build's prediction."""
import pytest

from megasim.app.calibrate.profile import simulation_model
from megasim.app.catalog import partition_for
from megasim.app.pick import rank_builds
from megasim.app.torch.schedules import Schedule, Schedules
from megasim.contract.errors import MegasimError
from megasim.contract.mapping import make
from megasim.contract.problem import Partition
from megasim.gpu.backend import kernel_build_hash

pytest.importorskip("optuna")

SHAPE = (8, 64, 28, 28, 128)


def schedule(predicted_us=100.0, torch_us=None) -> Schedule:
    return Schedule(SHAPE, 4, Partition(), "static", "paper", gpu="h200", kernel_build=kernel_build_hash(),
                    predicted_us=predicted_us, torch_us=torch_us)


@pytest.mark.parametrize("torch_us, backend, fragment", [
    (80.0, "torch", "torch measured 80.0 us, below the build's predicted 100.0 us"),
    (120.0, "megasim", "predicted 100.0 us, below torch's measured 120.0 us"),
])
def test_auto_runs_the_faster_side_and_says_why(tmp_path, torch_us, backend, fragment):
    measured = []
    got = Schedules(cache_dir=str(tmp_path)).decide(schedule(), lambda shape: measured.append(shape) or torch_us)
    assert measured == [SHAPE]
    assert got.backend == backend and got.torch_us == torch_us and fragment in got.reason
    assert fragment in got.describe() or got.backend == "megasim"


def test_torchs_time_is_measured_once_and_kept_with_the_schedule(tmp_path):
    sch = Schedules(cache_dir=str(tmp_path))
    sch.decide(schedule(), lambda shape: 80.0)
    assert sch.cached(SHAPE, "h200").torch_us == 80.0
    again = sch.decide(schedule(torch_us=80.0), lambda shape: pytest.fail("measured twice"))
    assert again.backend == "torch"


@pytest.mark.parametrize("backend", ["megasim", "torch"])
def test_a_user_can_force_either_side(backend):
    got = Schedules(backend=backend).decide(schedule(), lambda shape: pytest.fail("forced: nothing to measure"))
    assert got.backend == backend and "forced" in got.reason


def test_an_unknown_backend_is_refused():
    with pytest.raises(MegasimError, match="unknown backend 'cudnn'"):
        Schedules(backend="cudnn")


def test_a_searched_schedule_is_the_best_predicted_build_of_the_whole_space(tmp_path):
    """Budget 16 is exactly the discrete builds of F(2) and F(4) (12 fused, 4 non-fused), each simulated:
    the schedule is the one `simulate --all-builds` ranks first among them."""
    got = Schedules(cache_dir=str(tmp_path), search_budget=16, variants=(2, 4)).resolve(SHAPE, "h200")
    layer = got.layer
    gpu = simulation_model("h200")[0]
    ranked = [r for r in rank_builds(layer, partition_for(layer, "h200"), gpu, lambda g: make(g, "paper"),
                                     "in_order_round_robin") if r.build.variant in (2, 4)]
    best = ranked[0].build
    assert (got.launch, got.variant, got.mode, got.gemm) == (best.launch, best.variant, best.mode, best.gemm)
    assert got.partition == best.partition
    assert got.predicted_us == pytest.approx(ranked[0].time_us)
