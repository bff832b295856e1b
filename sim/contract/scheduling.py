"""How the megakernel's blocks find their tasks: the scheduling modes both executors implement.

- `static`: one block per task. Each new block takes a logical index from an atomic ticket (blocks do
  not start in blockIdx order), so every task pays a block launch: the hardware dispatcher's latency
  and the block's prologue.
- `persistent`: as many blocks as fit at once (SMs x blocks per SM, the build's own occupancy). Each
  block loops: ticket, task-map read, wait, run, signal. Only the first wave pays a block launch; a
  grid larger than what can be co-resident would deadlock (a waiting block could hold the slot its
  parent needs), so the launcher refuses one.

Logical order, dependencies and output are the same in every mode; only the cost of starting a task
differs, which is what the simulator's `block_launch_cycles` stands for.
"""
from __future__ import annotations

from megasim.contract.errors import MegasimError

MODES = ("static", "persistent")


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise MegasimError(f"unknown scheduling mode {mode!r}; known: {', '.join(MODES)}")
    return mode
