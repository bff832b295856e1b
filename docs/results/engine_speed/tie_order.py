"""How much the prediction depends on the order of the actions that share an instant.

    python docs/results/engine_speed/tie_order.py

The engine runs the actions due at one instant in the order they were scheduled (SimPy's FIFO order,
`megasim.engine.clock`). This runs each fused layer twice on the calibrated H200 (and on v100's datasheet):
as is, and with every instant's actions in reverse. Nothing else changes, so the difference is what the
same-instant order alone is worth. The last column moves the actions' instants instead: the quantum that
rounds them (32 cycles) becomes 31.99. Both are why the issue 14 rewrite keeps every action at its instant
and in its order instead of dropping events that looked redundant (`lazy_memory_queues.diff`).
"""
from __future__ import annotations

import megasim.engine.core as core
from megasim.engine.clock import Clock

LAYERS = [("ResNet-1", "h200"), ("ResNet-2", "h200"), ("VGG-3", "h200"), ("YOLOv3-5", "v100")]


class ReversedClock(Clock):
    """The engine's clock, running each instant's actions last-scheduled first."""

    __slots__ = ()

    def _run(self, ev) -> None:
        when = ev.value
        for fn, arg in reversed(self.pending.pop(when)):
            fn(when, arg)


def fused_us(layer: str, gpu_name: str, mode: str, quantum: float = core.DEFAULT_QUANTUM_CYCLES) -> float:
    from megasim.app.calibrate.profile import gpu_for_simulation
    from megasim.app.catalog import partition_for, resolve_layer
    from megasim.contract.graph import build_graph
    from megasim.contract.mapping import make
    from megasim.contract.problem import WinogradVariant
    from megasim.engine import fused_kernels, run_kernels
    gpu, _ = gpu_for_simulation(gpu_name)
    spec = resolve_layer(layer, None)
    graph = build_graph(spec, WinogradVariant(), partition_for(spec, gpu.name))
    run = run_kernels(graph, fused_kernels(graph, make(graph, "paper"), mode), gpu, quantum=quantum)
    return gpu.cycles_to_us(run.total_cycles)


def main() -> None:
    print("| layer | GPU | mode | as scheduled us | reversed us | change | quantum 31.99: change |")
    print("|---|---|---|---|---|---|---|")
    for layer, gpu in LAYERS:
        for mode in ("static", "persistent"):
            core.Clock = Clock
            fifo = fused_us(layer, gpu, mode)
            core.Clock = ReversedClock
            rev = fused_us(layer, gpu, mode)
            core.Clock = Clock
            moved = fused_us(layer, gpu, mode, quantum=31.99)
            print(f"| {layer} | {gpu} | {mode} | {fifo:.2f} | {rev:.2f} | {rev / fifo - 1:+.2%} "
                  f"| {moved / fifo - 1:+.2%} |")


if __name__ == "__main__":
    main()
