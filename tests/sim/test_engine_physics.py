"""Known answers from the roofs: FLOPs/peak, bytes/bandwidth, paper eqs. (8) and (9)."""
import numpy as np
import pytest

from megasim.engine import Kernel, run_kernels
from megasim.contract.problem import Op

from .conftest import BLOCK, synthetic_graph, toy_gpu


def test_compute_only_runs_at_flops_over_peak(gpu):
    n, f = 400, 1e5
    g = synthetic_graph([Op.GEMM] * n, [f] * n, [0] * n)
    run = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu)
    ideal = n * f / (gpu.sm_count * gpu.fp32_flops_per_cycle_per_sm)
    assert run.total_cycles == pytest.approx(ideal, rel=0.02)


def test_compute_efficiency_scales_the_fp32_roof():
    gpu = toy_gpu(compute_efficiency={"gemm": 0.5})
    n, f = 400, 1e5
    g = synthetic_graph([Op.GEMM] * n, [f] * n, [0] * n)
    run = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu)
    assert run.total_cycles == pytest.approx(2 * n * f / (gpu.sm_count * gpu.fp32_flops_per_cycle_per_sm), rel=0.02)


def test_memory_only_runs_at_bytes_over_bandwidth():
    gpu = toy_gpu(l2_bytes=1)
    n, b = 400, 1_000_000
    g = synthetic_graph([Op.INPUT_TRANSFORM] * n, [1.0] * n, [b] * n)
    run = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu)
    assert run.total_cycles == pytest.approx(n * b / gpu.dram_bytes_per_cycle, rel=0.02)
    assert run.l2_stats["INPUT"]["hit_bytes"] == 0


def test_per_block_bandwidth_cap_limits_a_lone_block():
    gpu = toy_gpu(l2_bytes=1, sm_bytes_per_cycle=10.0, max_blocks_per_sm=1)
    g = synthetic_graph([Op.INPUT_TRANSFORM], [1.0], [10_000])
    run = run_kernels(g, [Kernel(np.arange(1), BLOCK, False)], gpu, quantum=0)
    assert run.total_cycles == pytest.approx(1000, rel=1e-6)


def _mixed(n_each=300):
    """Memory tasks and compute tasks of equal total time on their own roof."""
    gpu = toy_gpu(l2_bytes=1)
    f = 1e5
    b = f / (gpu.sm_count * gpu.fp32_flops_per_cycle_per_sm) * gpu.dram_bytes_per_cycle
    ops = [Op.INPUT_TRANSFORM] * n_each + [Op.GEMM] * n_each
    flops = [1.0] * n_each + [f] * n_each
    rd = [int(b)] * n_each + [0] * n_each
    return gpu, synthetic_graph(ops, flops, rd), n_each * f / (gpu.sm_count * gpu.fp32_flops_per_cycle_per_sm), n_each * int(b) / gpu.dram_bytes_per_cycle


def test_fused_mixed_approaches_max_of_roofs_eq9():
    gpu, g, t_compute, t_memory = _mixed()
    n = len(g.op) // 2
    interleaved = np.ravel(np.column_stack([np.arange(n), n + np.arange(n)]))
    run = run_kernels(g, [Kernel(interleaved, BLOCK, False)], gpu)
    assert run.total_cycles == pytest.approx(max(t_compute, t_memory), rel=0.06)


def test_nonfused_mixed_approaches_sum_of_roofs_eq8():
    gpu, g, t_compute, t_memory = _mixed()
    n = len(g.op) // 2
    kernels = [Kernel(np.arange(n), BLOCK, False), Kernel(n + np.arange(n), BLOCK, False)]
    run = run_kernels(g, kernels, gpu)
    assert run.total_cycles == pytest.approx(t_compute + t_memory, rel=0.03)


def test_launch_gap_separates_kernels():
    gpu = toy_gpu(launch_overhead_us=5.0)
    g = synthetic_graph([Op.GEMM] * 8, [100.0] * 8, [0] * 8)
    run = run_kernels(g, [Kernel(np.arange(4), BLOCK, False), Kernel(4 + np.arange(4), BLOCK, False)], gpu,
                      quantum=0)
    (a0, a1), (b0, b1) = run.kernel_spans_cycles
    assert b0 - a1 == pytest.approx(5000)


def test_a_lone_block_takes_at_least_one_dram_latency():
    gpu = toy_gpu(dram_latency_cycles=1000)
    g = synthetic_graph([Op.INPUT_TRANSFORM], [1.0], [10])
    run = run_kernels(g, [Kernel(np.arange(1), BLOCK, False)], gpu, quantum=0)
    assert run.total_cycles == pytest.approx(1000, rel=1e-6)


def test_block_work_variation_keeps_the_mean_and_breaks_lockstep():
    n, f = 400, 1e5
    g = synthetic_graph([Op.GEMM] * n, [f] * n, [0] * n)
    gpu = toy_gpu(block_work_cv=0.2, max_blocks_per_sm=1)
    runs = [run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu, seed=s) for s in (0, 0, 1)]
    work = runs[0].records["end_us"] - runs[0].records["ready_us"]
    assert work.std() / work.mean() == pytest.approx(0.2, abs=0.04)
    assert runs[0].total_cycles == runs[1].total_cycles != runs[2].total_cycles
    ideal = n * f / (gpu.sm_count * gpu.fp32_flops_per_cycle_per_sm)
    assert runs[0].total_cycles == pytest.approx(ideal, rel=0.1)


def test_persistent_blocks_skip_the_dispatch():
    """One slot, eight tasks: a persistent block pays dispatch once, a static one per task; both pay the task
    overhead (ticket, task-map read) per task."""
    gpu = toy_gpu(sm_count=1, max_blocks_per_sm=1, tb_dispatch_latency_cycles=300, task_overhead_cycles=1000)
    n = 8
    g = synthetic_graph([Op.GEMM] * n, [1000.0] * n, [0] * n)
    static = run_kernels(g, [Kernel(np.arange(n), BLOCK, True)], gpu, quantum=0.0).total_cycles
    persistent = run_kernels(g, [Kernel(np.arange(n), BLOCK, True, persistent=True)], gpu, quantum=0.0).total_cycles
    work = 1000.0 / gpu.fp32_flops_per_cycle_per_sm
    assert static == pytest.approx(n * (300 + 1000 + work))
    assert persistent == pytest.approx((300 + 1000 + work) + (n - 1) * (1000 + work))


def test_a_block_pays_each_counter_it_reads_even_when_already_zero():
    """Two tasks signal one counter each; the third polls both. On one slot it starts after they have ended,
    so nothing is pending, yet reading the two counters costs it two `wait_check_cycles` (the traces show a
    GEMM's start-to-ready about two such reads longer than a transform's)."""
    import dataclasses
    g = synthetic_graph([Op.INPUT_TRANSFORM, Op.INPUT_TRANSFORM, Op.GEMM], [1000.0] * 3, [0] * 3)
    g = dataclasses.replace(g, waits_on=np.array([[-1, -1], [-1, -1], [0, 1]], dtype=np.int32),
                            signals=np.array([0, 1, -1], dtype=np.int32), counter_init=np.ones(2, dtype=np.int32))
    times = {}
    for check in (0.0, 250.0):
        gpu = toy_gpu(sm_count=1, max_blocks_per_sm=1, tb_dispatch_latency_cycles=300, task_overhead_cycles=1000,
                      wait_check_cycles=check)
        run = run_kernels(g, [Kernel(np.arange(3), BLOCK, True)], gpu, quantum=0.0)
        times[check] = run.total_cycles
        rec = run.records
        assert rec["ready_us"][2] - rec["start_us"][2] == pytest.approx(2 * check / gpu.clock_mhz)
    assert times[250.0] - times[0.0] == pytest.approx(500.0)


@pytest.mark.parametrize("slots", [2, 4])
def test_resident_sharing_makes_a_block_take_its_latency_plus_its_share_of_all_working_blocks(slots):
    """Blocks of FP32 work W and latency L, staggered on one SM. Under 'resident' every working block keeps its
    share of the SM's issue until it ends, so each takes L + slots x W (the law the H100 traces follow); under
    'jobs' one block's latency overlaps the others' work and it takes less."""
    n, flops, latency = 60, 25600.0, 1000.0
    g = synthetic_graph([Op.GEMM] * n, [flops] * n, [0] * n)
    work = {}
    for sharing in ("jobs", "resident"):
        gpu = toy_gpu(sm_count=1, max_blocks_per_sm=slots, tb_dispatch_latency_cycles=0,
                      tb_dispatch_interval_cycles=150.0, block_fixed_cycles={"gemm": latency},
                      **({"resident_sharing": {}} if sharing == "resident" else {}))
        rec = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu, quantum=0.0).records
        work[sharing] = float(np.median((rec["end_us"] - rec["ready_us"])[10:-10])) * gpu.clock_mhz
    w = flops / toy_gpu().fp32_flops_per_cycle_per_sm
    assert work["resident"] == pytest.approx(latency + slots * w, rel=1e-3)
    assert work["jobs"] < work["resident"] - 0.5 * w


def test_issue_weights_share_an_sm_in_proportion():
    """A GEMM (weight 3) and an input transform (weight 1) of equal FP32 work start together on one SM: the
    GEMM gets 3/4 of the SM until it ends, then the transform has it all."""
    flops = 25600.0
    g = synthetic_graph([Op.GEMM, Op.INPUT_TRANSFORM], [flops, flops], [0, 0])
    gpu = toy_gpu(sm_count=1, max_blocks_per_sm=2, tb_dispatch_latency_cycles=0, tb_dispatch_interval_cycles=1e-6,
                  resident_sharing={"issue_weight": {"gemm": 3.0}})
    rec = run_kernels(g, [Kernel(np.arange(2), BLOCK, False)], gpu, quantum=0.0).records
    work = (rec["end_us"] - rec["ready_us"]) * gpu.clock_mhz
    peak = gpu.fp32_flops_per_cycle_per_sm
    assert work[0] == pytest.approx(flops / (peak * 3 / 4), rel=1e-6)
    assert rec["end_us"][1] * gpu.clock_mhz == pytest.approx(2 * flops / peak, rel=1e-6)


def test_equal_issue_weights_are_resident_sharing():
    n = 60
    g = synthetic_graph([Op.GEMM, Op.INPUT_TRANSFORM] * (n // 2), [25600.0] * n, [0] * n)
    runs = []
    for extra in ({"resident_sharing": {}}, {"resident_sharing": {"issue_weight": {"gemm": 1.0}}}):
        gpu = toy_gpu(sm_count=2, max_blocks_per_sm=3, tb_dispatch_latency_cycles=0, tb_dispatch_interval_cycles=150.0,
                      block_fixed_cycles={"gemm": 1000.0}, **extra)
        runs.append(run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu, quantum=0.0).total_cycles)
    assert runs[1] == pytest.approx(runs[0], rel=1e-9)


def test_a_non_fused_block_pays_no_megakernel_overhead():
    """Ticket and task-map read are the megakernel's: a non-fused block pays its dispatch only."""
    gpu = toy_gpu(sm_count=1, max_blocks_per_sm=1, tb_dispatch_latency_cycles=300, task_overhead_cycles=1000)
    n = 8
    g = synthetic_graph([Op.GEMM] * n, [1000.0] * n, [0] * n)
    plain = run_kernels(g, [Kernel(np.arange(n), BLOCK, False)], gpu, quantum=0.0).total_cycles
    assert plain == pytest.approx(n * (300 + 1000.0 / gpu.fp32_flops_per_cycle_per_sm))


def test_persistent_mode_is_static_when_starting_a_task_costs_nothing():
    gpu = toy_gpu(tb_dispatch_latency_cycles=0, tb_dispatch_interval_cycles=0.0, task_overhead_cycles=0)
    n = 64
    g = synthetic_graph([Op.GEMM, Op.INPUT_TRANSFORM] * (n // 2), [5e4] * n, [20_000] * n)
    runs = [run_kernels(g, [Kernel(np.arange(n), BLOCK, False, persistent=p)], gpu) for p in (False, True)]
    assert runs[0].total_cycles == runs[1].total_cycles
    assert np.array_equal(runs[0].records["sm"], runs[1].records["sm"])


def _input_beside_gemm(sm_count: int, **extra):
    """An input transform (FP32 work and serial latency) and a long GEMM (latency only) starting together, on
    one SM or on two: the input block's work, cycles."""
    g = synthetic_graph([Op.GEMM, Op.INPUT_TRANSFORM], [1.0, 25600.0], [0, 0])
    gpu = toy_gpu(sm_count=sm_count, max_blocks_per_sm=2, tb_dispatch_latency_cycles=0,
                  tb_dispatch_interval_cycles=1e-6, block_fixed_cycles={"gemm": 1e6, "input_transform": 500.0}, **extra)
    rec = run_kernels(g, [Kernel(np.arange(2), BLOCK, False)], gpu, quantum=0.0).records
    assert len(set(rec["sm"])) == sm_count
    return float((rec["end_us"] - rec["ready_us"])[1]) * gpu.clock_mhz


def test_a_working_gemm_stretches_its_neighbours_work():
    """Per-block traces: an input transform beside a working GEMM takes longer than beside none, by a factor
    of its type (the law `gemm_neighbour_stretch`), its jobs and its serial latency alike."""
    plain = _input_beside_gemm(1)
    assert plain == pytest.approx(25600.0 / toy_gpu().fp32_flops_per_cycle_per_sm + 500.0, rel=1e-4)
    assert _input_beside_gemm(1, gemm_neighbour_stretch={"stretch": {"input_transform": 0.4}}) == pytest.approx(1.4 * plain, rel=1e-6)
    assert _input_beside_gemm(1, gemm_neighbour_stretch={"stretch": {"output_transform": 0.4}}) == pytest.approx(plain, rel=1e-9)


def test_a_gemm_on_another_sm_stretches_nothing():
    spread = {"first_wave_lead_sms": [0, 1]}
    plain = _input_beside_gemm(2, **spread)
    assert _input_beside_gemm(2, gemm_neighbour_stretch={"stretch": {"input_transform": 0.4}}, **spread) == pytest.approx(plain, rel=1e-9)
