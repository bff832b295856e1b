"""Stage 1b: what per-block traces measure for the fit (`megasim.app.calibrate.trace_law`)."""
import json
from pathlib import Path

import numpy as np
import pytest

from megasim.app.calibrate.run import traced_constants
from megasim.app.calibrate.trace_law import (default_sample, gemm_body_laws, gemm_law, graph_of, load_sample, output_law,
                                             overlap, overlaps, sm_overlaps, task_costs)
from megasim.app.catalog import load_gpu
from megasim.app.cli import main
from megasim.contract.errors import MegasimError
from megasim.contract.problem import Op
from megasim.contract.records import records_from_dicts

from ..conftest import CALIBRATION_RAW

SAMPLES = Path(__file__).parents[2] / "docs" / "results" / "trace_sample"
SAMPLE_NPZ = CALIBRATION_RAW / "h100_trace_sample.npz"


@pytest.fixture(params=["h100", "h200"])
def sample(request):
    """(folder of the committed laws, packed sample) of each GPU's trace sample."""
    return SAMPLES / request.param, CALIBRATION_RAW / f"{request.param}_trace_sample.npz"


class Fits:
    """Each packed sample loaded and each law fitted on it once for the module: the tests only read them."""

    def __init__(self):
        self.memo = {}

    def _once(self, key, make):
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def sample(self, npz):
        return self._once(("sample", npz), lambda: load_sample(npz))

    def gemm_law(self, npz, clock):
        return self._once(("gemm_law", npz, clock), lambda: gemm_law(*self.sample(npz), clock, 256))

    def gemm_body_laws(self, npz, clock):
        return self._once(("gemm_body_laws", npz, clock), lambda: gemm_body_laws(*self.sample(npz), clock, 256))

    def output_law(self, npz, clock):
        return self._once(("output_law", npz, clock), lambda: output_law(*self.sample(npz), clock, 256))


@pytest.fixture(scope="module")
def fits():
    return Fits()


@pytest.fixture(scope="module")
def h200_trace():
    return json.loads((CALIBRATION_RAW / "h200_trace_resnet2.json").read_text())


def test_task_costs_of_the_h200_trace(h200_trace):
    """ResNet-2 on the H200: a transform is ready 1.15 us after its start, a GEMM (two counters) 2.5 us, and a
    slot is retaken 0.45 us after a block ends; less the 534 dispatch cycles the spec charges already."""
    costs = task_costs(graph_of(h200_trace), records_from_dicts(h200_trace["records"]), 1979.49, 534)
    assert costs == {"task_overhead_cycles": 2633, "wait_check_cycles": pytest.approx(1330.2, abs=0.1)}


@pytest.mark.slow
def test_the_gemm_law_is_the_committed_one(sample, fits):
    folder, npz = sample
    law = json.loads((folder / "gemm_law.json").read_text())
    fixed, step, eff, errors = fits.gemm_law(npz, law["clock_mhz"])
    assert (round(fixed, 1), round(step, 1), round(eff, 4)) == (law["block_fixed_cycles"], law["step_cycles"],
                                                               law["compute_efficiency"])
    assert len(errors) == 72


@pytest.mark.slow
def test_one_gemm_law_per_body_is_the_committed_one_and_fits_better_than_one_for_all(sample, fits):
    """The 8 x 8 body pays more than twice the 8 x 4's fixed cycles a block; each 128-thread body's own law has
    a smaller median error than the one law of all bodies (4.3% on the H100's sample, 3.7% on the H200's); a
    scalar body keeps its sibling's efficiency and fixed cycles and takes longer steps."""
    folder, npz = sample
    committed = json.loads((folder / "gemm_body_laws.json").read_text())
    laws = fits.gemm_body_laws(npz, 1980.0)
    assert set(laws) == set(committed) == {"t128-8x4", "t128-8x4-scalar", "t128-8x8", "t96-8x4", "t96-8x4-scalar"}
    for body, (fixed, step, eff, errors) in laws.items():
        assert (round(fixed, 1), round(step, 1), round(eff, 4)) == tuple(
            committed[body][k] for k in ("block_fixed_cycles", "step_cycles", "compute_efficiency"))
    one = np.median(np.abs(list(fits.gemm_law(npz, 1980.0)[3].values())))
    assert all(np.median(np.abs(list(laws[body][3].values()))) < one for body in ("t128-8x4", "t128-8x8"))
    assert laws["t128-8x8"][0] > 2 * laws["t128-8x4"][0]
    for body in ("t128-8x4", "t96-8x4"):
        scalar = laws[body + "-scalar"]
        assert (scalar[0], scalar[2]) == (laws[body][0], laws[body][2]) and scalar[1] > 1.3 * laws[body][1]


@pytest.mark.slow
def test_the_output_law_is_the_committed_one(sample, fits):
    """An output block is slowed by its SM's blocks and by the chip's other outputs: the four-term law fits
    each sample's 72 launches with a median error near 10%, and its chip rate lies between the GPU's DRAM
    and L2 rates (the H200's, with 1.4x the H100's DRAM bandwidth, is 1.5x the H100's)."""
    folder, npz = sample
    law = json.loads((folder / "output_law.json").read_text())
    fixed, step, eff, chip, errors = fits.output_law(npz, law["clock_mhz"])
    assert (round(fixed, 1), round(step, 1), round(eff, 4), round(chip, 1)) == (
        law["block_fixed_cycles"], law["step_cycles"], law["compute_efficiency"], law["chip_bytes_per_cycle"])
    assert len(errors) == 72
    assert sorted(abs(e) for e in errors.values())[36] < 0.12
    gpu = load_gpu(folder.name)
    assert gpu.dram_gbps * 1e3 / 1980 < chip < gpu.l2_gbps * 1e3 / 1980


@pytest.mark.parametrize("cells", [None, 97])
def test_overlaps_are_the_one_block_overlap_bit_for_bit(monkeypatch, cells):
    """The laws weigh each block's neighbours a matrix at a time (`overlaps`, `sm_overlaps`): the same numbers,
    to the last bit, as `overlap` one block at a time, whatever the SMs, windows and chunking."""
    if cells is not None:
        monkeypatch.setattr("megasim.app.calibrate.trace_law._OVERLAP_CELLS", cells)
    rng = np.random.default_rng(7)
    n = 3000
    sm = rng.integers(0, 40, n)
    ready = np.round(rng.uniform(0, 500, n), 1) * 0.032
    end = ready + rng.choice([0.0, 0.032, 3.2, 40.0], n) * rng.uniform(0, 2, n)
    rows = np.flatnonzero(end > ready)[::3]
    pool = np.flatnonzero(sm % 5 != 1)  # some rows' SMs have no blocks in the pool
    here = [pool[sm[pool] == sm[j]] for j in rows]
    want = [overlap(ready[j], end[j], ready[i], end[i]) for j, i in zip(rows, here)]
    assert sm_overlaps(rows, pool, sm, ready, end).tobytes() == np.array(want).tobytes()
    want = [overlap(ready[j], end[j], ready[pool], end[pool]) for j in rows]
    assert overlaps(ready[rows], end[rows], ready[pool], end[pool]).tobytes() == np.array(want).tobytes()


@pytest.mark.slow
def test_traced_constants_pin_the_gemm_and_measure_the_task_cost(h200_trace):
    model, pinned = traced_constants(load_gpu("h200"), h200_trace, SAMPLE_NPZ)
    assert model["laws"] == ["resident_sharing", "gemm_neighbour_stretch", "first_wave_stagger", "gemm_body_laws"]
    assert model["wait_check_cycles"] > 1000
    assert set(pinned) == {Op.GEMM, Op.OUTPUT_TRANSFORM}
    assert pinned[Op.GEMM]["compute_efficiency"] == pytest.approx(0.7044, abs=1e-4)
    assert pinned[Op.OUTPUT_TRANSFORM]["compute_efficiency"] == pytest.approx(0.3464, abs=1e-4)
    bodies = {"t128-8x4", "t128-8x4-scalar", "t128-8x8", "t96-8x4", "t96-8x4-scalar"}
    laws = model["gemm_body_laws"]
    assert set(laws["nonfused"]) == bodies and set(laws["fused"]) == bodies
    # the GEMM kernel's laws from the non-fused launches, the megakernel's from the fused ones: not one law twice
    assert laws["nonfused"]["t128-8x8"] != laws["fused"]["t128-8x8"]
    assert model["resident_sharing"] == {"issue_weight": {"gemm": 2.0}}
    assert model["gemm_neighbour_stretch"] == {"stretch": {"input_transform": 0.2}}
    # the H100 sample's GEMM kernels end their first wave 16% apart: half of it staggers each side
    assert model["first_wave_stagger"] == {"stagger": {"gemm": 0.08}}


def test_each_gpu_takes_its_own_trace_sample_and_one_without_borrows_another(tmp_path):
    for gpu in ("h100", "h200"):
        assert default_sample(CALIBRATION_RAW, gpu) == CALIBRATION_RAW / f"{gpu}_trace_sample.npz"
    assert default_sample(tmp_path, "h200") == tmp_path / "h200_trace_sample.npz"  # none there: the error names it
    (tmp_path / "h100_trace_sample.npz").write_bytes(b"")
    assert default_sample(tmp_path, "h200") == tmp_path / "h100_trace_sample.npz"


def test_resident_fit_without_its_traces_is_one_line(tmp_path, capsys, h200_trace):
    with pytest.raises(MegasimError, match="trace sample"):
        traced_constants(load_gpu("h200"), h200_trace, tmp_path / "none.npz")
    out = tmp_path / "p.toml"
    assert main(["calibrate", "--gpu", "h200", "--from-raw", "--sharing", "resident",
                 "--trace-sample", str(tmp_path / "none.npz"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trace sample" in err[0] and not out.exists()


@pytest.mark.parametrize("content", ["text", "npz-without-meta"])
def test_a_file_that_is_not_a_trace_sample_is_one_line(tmp_path, capsys, content):
    import numpy as np
    bad = tmp_path / "bad.npz"
    if content == "text":
        bad.write_text("not an archive")
    else:
        np.savez(bad, a=np.zeros(3))
    with pytest.raises(MegasimError, match="not a packed trace sample"):
        load_sample(bad)
    out = tmp_path / "p.toml"
    assert main(["calibrate", "--gpu", "h200", "--from-raw", "--sharing", "resident", "--trace-sample", str(bad),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a packed trace sample" in err[-1] and not out.exists()


def test_the_default_resident_fit_without_a_block_trace_says_how_to_fit_without(tmp_path, capsys):
    for name in ("h200_micro.json", "h200_runs.json"):
        (tmp_path / name).write_bytes((CALIBRATION_RAW / name).read_bytes())
    out = tmp_path / "p.toml"
    assert main(["calibrate", "--gpu", "h200", "--from-raw", "--raw", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--sharing jobs" in err[0] and not out.exists()
