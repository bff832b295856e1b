"""The short table `megasim simulate` prints.

Plain text, like `megasim bench`'s table: a terminal library would cost the
command more start-up time than the table is worth (docs/results/engine_speed/startup.py).
"""
from __future__ import annotations

from megasim.engine.simulate import floors_us


def format_partition(partition, source: str) -> list[str]:
    """The partition the tasks were cut by, in `--partition`'s own syntax, and where it came from: two runs
    of one convolution differ by it (a named layer's table row against a shape's default)."""
    fields = ",".join(f"{k}={v}" for k, v in partition.to_dict().items())
    return [f"partition: {fields}", f"partition from: {source}"]


def format_simulation(graph, gpu, result, partition_source: str | None = None) -> str:
    g, f, n = graph.geometry, result.fused, result.nonfused
    floors = floors_us(graph, gpu)
    head = (f"{graph.layer.name} {graph.layer.shape()}  F({graph.variant.m}x{graph.variant.m},3x3)  "
            f"on {gpu.full_name}  |  {result.strategy} {result.params}  |  dispatch {result.policy}")
    tasks = (f"tasks: N_F={g.n_f} N_G={g.n_g} S_I={g.s_i} S_G={g.s_g} S_O={g.s_o} -> {graph.num_tasks} blocks; "
             f"{graph.flops.sum() / 1e9:.2f} GFLOP")
    table = [f"{'':22} {'time (us)':>10} {'DRAM (MB)':>10} {'L2 hit':>7} {'spin (us, summed)':>18}",
             f"{'fused megakernel':22} {f.time_us:10.1f} {f.dram_bytes / 1e6:10.1f} {f.l2_hit_rate:7.1%} "
             f"{f.spin_us:18.1f}",
             f"{'non-fused (4 kernels)':22} {n.time_us:10.1f} {n.dram_bytes / 1e6:10.1f} {n.l2_hit_rate:7.1%} "
             f"{'-':>18}"]
    kernels = " + ".join(f"{b - a:.1f}" for a, b in n.kernel_spans_us)
    part = format_partition(graph.partition, partition_source) if partition_source else []
    return "\n".join([head, tasks, *part, build_line(graph.variant.m, result), *table,
                      f"non-fused kernels (filter + input + GEMM + output): {kernels} us, plus launch gaps",
                      f"speedup fused / non-fused: {result.speedup:.3f}x   infusible tasks: {result.infusible}   "
                      f"floors: FP32 {floors['flop_floor_us']:.1f} us, DRAM {floors['dram_floor_us']:.1f} us   "
                      f"(simulated in {result.sim_seconds:.2f} s)"])


def builds_text(variant: int, mode: str, gemm: str, precision: str) -> str:
    """The two builds one simulation runs, every axis named (launch, variant, mode, GEMM body, precision), FP32
    included: `simulate` and `simulate --network` print it."""
    return f"fused F{variant} {mode} {gemm} {precision} | non-fused F{variant} {gemm} {precision}"


def build_line(variant: int, result) -> str:
    return f"builds: {builds_text(variant, result.mode, result.gemm, result.precision)}"


def format_call(call: dict) -> str:
    """The prediction intervals from the profile's held-out residuals, and the call they support."""
    (f0, f1), (n0, n1), (m0, m1) = call["fused_interval_us"], call["nonfused_interval_us"], call["margin_interval"]
    return (f"{call['coverage']:.0%} intervals (held-out residuals): fused {f0:.1f}-{f1:.1f} us, non-fused "
            f"{n0:.1f}-{n1:.1f} us, fusion margin {m0:+.1%} to {m1:+.1%}: {call['call']}")


def print_simulation(graph, gpu, result, partition_source: str | None = None) -> None:
    print(format_simulation(graph, gpu, result, partition_source))


def print_call(call: dict) -> None:
    print(format_call(call))
