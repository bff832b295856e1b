"""The short table `megasim simulate` prints."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from megasim.engine.simulate import floors_us


class _Console(Console):
    """A closed pipe is the CLI's to handle (quietly, exit 141), not rich's SystemExit(1)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def stdout_console() -> Console:
    """Stdout's console: on a terminal, wrapped to its width; piped or redirected, lines kept whole, so
    `megasim simulate | grep speedup` finds the whole sentence."""
    tty = sys.stdout.isatty()
    return _Console(soft_wrap=not tty, width=None if tty else 200)


def print_simulation(graph, gpu, result, console: Console | None = None) -> None:
    console = console or stdout_console()
    g, f, n = graph.geometry, result.fused, result.nonfused
    floors = floors_us(graph, gpu)
    head = (f"[bold]{graph.layer.name}[/] {graph.layer.shape()}  F({graph.variant.m}x{graph.variant.m},3x3)  "
            f"on {gpu.full_name}  |  {result.strategy} {result.params}  |  dispatch {result.policy}")
    console.print(head)
    console.print(f"tasks: N_F={g.n_f} N_G={g.n_g} S_I={g.s_i} S_G={g.s_g} S_O={g.s_o} -> {graph.num_tasks} blocks; "
                  f"{graph.flops.sum() / 1e9:.2f} GFLOP")
    table = Table(show_header=True, header_style="bold")
    for col in ("", "time (us)", "DRAM (MB)", "L2 hit", "spin (us, summed)"):
        table.add_column(col, justify="right")
    table.add_row("fused megakernel", f"{f.time_us:.1f}", f"{f.dram_bytes / 1e6:.1f}", f"{f.l2_hit_rate:.1%}",
                  f"{f.spin_us:.1f}")
    kernels = " + ".join(f"{b - a:.1f}" for a, b in n.kernel_spans_us)
    table.add_row("non-fused (4 kernels)", f"{n.time_us:.1f}", f"{n.dram_bytes / 1e6:.1f}", f"{n.l2_hit_rate:.1%}", "-")
    console.print(table)
    console.print(f"non-fused kernels (filter + input + GEMM + output): {kernels} us, plus launch gaps")
    console.print(f"[bold]speedup fused / non-fused: {result.speedup:.3f}x[/]   infusible tasks: {result.infusible}   "
                  f"floors: FP32 {floors['flop_floor_us']:.1f} us, DRAM {floors['dram_floor_us']:.1f} us   "
                  f"(simulated in {result.sim_seconds:.2f} s)")


def print_call(call: dict, console: Console | None = None) -> None:
    """The prediction intervals from the profile's held-out residuals, and the call they support."""
    console = console or stdout_console()
    (f0, f1), (n0, n1), (m0, m1) = call["fused_interval_us"], call["nonfused_interval_us"], call["margin_interval"]
    console.print(f"{call['coverage']:.0%} intervals (held-out residuals): fused {f0:.1f}-{f1:.1f} us, non-fused "
                  f"{n0:.1f}-{n1:.1f} us, fusion margin {m0:+.1%} to {m1:+.1%}: [bold]{call['call']}[/]")
