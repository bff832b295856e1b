"""The SM company law (`megasim.engine.company`) and the megakernel's ticket race, on toy GPUs whose answers
follow from arithmetic."""
import numpy as np
import pytest

from megasim.contract.errors import MegasimError
from megasim.contract.problem import Op
from megasim.contract.spec import check_spec
from megasim.engine import Kernel, run_kernels

from .conftest import BLOCK, synthetic_graph, toy_gpu

UNSHARED = {"unshared_fp32": ("input_transform",)}


def _pair(sm_count: int, fused: bool = False, **extra):
    """A long GEMM (latency only) and an input transform (25,600 FLOPs and 500 fixed cycles) starting together, on
    one SM or on two: the two blocks' work, cycles."""
    g = synthetic_graph([Op.GEMM, Op.INPUT_TRANSFORM], [1.0, 25600.0], [0, 0])
    gpu = toy_gpu(sm_count=sm_count, max_blocks_per_sm=2, tb_dispatch_interval_cycles=1e-6,
                  block_fixed_cycles={"gemm": 1e6, "input_transform": 500.0}, **extra)
    rec = run_kernels(g, [Kernel(np.arange(2), BLOCK, fused)], gpu, quantum=0.0).records
    assert len(set(rec["sm"])) == sm_count
    return (rec["end_us"] - rec["ready_us"]) * gpu.clock_mhz


ALONE = 25600.0 / 100 + 500.0  # the input's FP32 at the SM's peak, then its fixed cycles


def test_an_unshared_block_is_slowed_by_its_company_on_its_own_sm_only():
    assert _pair(1, **UNSHARED)[1] == pytest.approx(ALONE, rel=1e-6)
    slowed = {**UNSHARED, "neighbour_slowdown": {"input_transform": {"gemm": 0.4}}}
    assert _pair(1, **slowed)[1] == pytest.approx(1.4 * ALONE, rel=1e-6)
    assert _pair(2, first_wave_lead_sms=[0, 1], **slowed)[1] == pytest.approx(ALONE, rel=1e-6)
    other = {**UNSHARED, "neighbour_slowdown": {"input_transform": {"output_transform": 0.4}}}
    assert _pair(1, **other)[1] == pytest.approx(ALONE, rel=1e-6)


def test_a_shared_type_is_slowed_over_its_whole_work():
    """A GEMM keeps its FP32 queue and is stretched over its whole work, latency included, by the company of its
    jobs' time: here its one FLOP ends at once, beside the working input."""
    plain = _pair(1, **UNSHARED)[0]
    assert plain == pytest.approx(1e6, rel=1e-4)
    assert _pair(1, **UNSHARED, neighbour_slowdown={"gemm": {"input_transform": 0.5}})[0] == pytest.approx(1.5 * plain,
                                                                                                  rel=1e-4)


def test_unshared_fp32_leaves_the_sm_to_the_others():
    """Two blocks of 25,600 FLOPs on one SM of 100 FLOPs a cycle: shared, the GEMM gets half the SM while both
    work; with the transform's FP32 unshared, the GEMM has it all."""
    g = synthetic_graph([Op.GEMM, Op.INPUT_TRANSFORM], [25600.0, 25600.0], [0, 0])
    ends = []
    for extra in ({}, UNSHARED):
        gpu = toy_gpu(sm_count=1, max_blocks_per_sm=2, tb_dispatch_interval_cycles=1e-6, **extra)
        ends.append(run_kernels(g, [Kernel(np.arange(2), BLOCK, False)], gpu, quantum=0.0).records["end_us"] * 1e3)
    assert ends[0] == pytest.approx([512.0, 512.0], rel=1e-4)
    assert ends[1] == pytest.approx([256.0, 256.0], rel=1e-4)


def test_the_code_factor_is_the_megakernels_only():
    coded = {**UNSHARED, "fused_code_factor": {"input_transform": 1.25}}
    assert _pair(1, fused=False, **coded)[1] == pytest.approx(ALONE, rel=1e-6)
    assert _pair(1, fused=True, **coded)[1] == pytest.approx(1.25 * ALONE, rel=1e-6)


def test_a_variants_code_factor_applies_to_its_own_builds():
    """The toy graph is F(4): its build's factor multiplies the type's; another variant's does nothing."""
    coded = {**UNSHARED, "fused_code_factor": {"input_transform": 1.25}}
    assert _pair(1, fused=True, fused_code_by_variant={"F4": 1.2}, **coded)[1] == pytest.approx(1.5 * ALONE, rel=1e-6)
    assert _pair(1, fused=True, fused_code_by_variant={"F6": 1.2}, **coded)[1] == pytest.approx(1.25 * ALONE, rel=1e-6)


@pytest.mark.parametrize("share, per_block", [("launch", 10.0 / 4), ("block", 10.0)])
def test_a_lone_block_draws_the_memory_path_its_share_allows(share, per_block):
    """Four blocks per SM in the launch, one of them moving bytes: 'launch' holds it to a quarter of the SM's
    path whether the others work or not, 'block' lets it use all of it."""
    g = synthetic_graph([Op.INPUT_TRANSFORM] * 4, [1.0] * 4, [10_000, 0, 0, 0])
    gpu = toy_gpu(sm_count=1, sm_bytes_per_cycle=10.0, dram_gbps=1e6, memory_path_share=share)
    rec = run_kernels(g, [Kernel(np.arange(4), BLOCK, False)], gpu, quantum=0.0).records
    assert rec["end_us"][0] * 1e3 == pytest.approx(10_000 / per_block, rel=1e-3)


def _first_wave(n: int, race: float, seed: int = 0, **kernel):
    gpu = toy_gpu(sm_count=8, max_blocks_per_sm=4, ticket_race=race)
    g = synthetic_graph([Op.INPUT_TRANSFORM] * n, [100.0] * n, [0] * n)
    rec = run_kernels(g, [Kernel(np.arange(n), BLOCK, True, **kernel)], gpu, seed=seed).records
    return rec["sm"][np.argsort(rec["task"])]


def test_the_ticket_race_clusters_a_static_megakernels_first_tickets():
    assert len(set(_first_wave(24, 0.0)[:8])) == 8
    raced = _first_wave(24, 0.5)
    assert len(set(raced[:8])) < 8 and sorted(raced) == sorted(_first_wave(24, 0.0))
    assert np.array_equal(raced, _first_wave(24, 0.5))
    assert not np.array_equal(raced, _first_wave(24, 0.5, seed=1))
    together = _first_wave(24, 1e-9)
    assert all(len(set(together[i:i + 3])) == 1 for i in range(0, 24, 3))


def test_the_race_leaves_small_and_persistent_launches_alone():
    assert np.array_equal(_first_wave(6, 0.5), _first_wave(6, 0.0))
    assert np.array_equal(_first_wave(24, 0.5, persistent=True), _first_wave(24, 0.0, persistent=True))


@pytest.mark.parametrize("model, words", [
    ({"neighbour_slowdown": {"input_transform": {"gemm": 0.3}}, "gemm_neighbour_stretch": {"input_transform": 0.2}},
     "both slow a block"),
    ({"fused_code_factor": {"output_transform": 1.2}, "unshared_fp32": ("input_transform",)}, "output_transform"),
])
def test_overlapping_neighbour_laws_are_refused(model, words):
    with pytest.raises(MegasimError, match=words):
        check_spec(toy_gpu(**model), "spec")
