"""`queue_pop`: a ready-queue block takes its next task through one shared head, one pop at a time.

The ready-queue mode hands each free slot the next ready task from a device FIFO: every pop is an atomic on
the queue's head and a read of the slot it names (`megasim.contract.scheduling`). Without a law the engine
charges a pop nothing beyond the persistent loop's per-task overhead, and predicted the ready queue faster
than static on 36 of the 39 (paper layer, variant) builds `bench` timed on the H200, where it was slower on 27
of them (2026-11-23 builds, `raw/h200_builds.json`). Atomics on one address are serialized
where the address lives in L2, so the law gives the head a rate: a pop wanted at t takes the head at
max(t, when the previous pop left it), holds it `pop_interval_cycles`, and its task starts `pop_cycles`
later. `calibrate` fits both on the training layers' ready-queue builds (`megasim.app.calibrate.queue_law`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from megasim.io.schema import float_in
from megasim.engine.laws.base import Law, law


@law("queue_pop")
@dataclass(frozen=True, kw_only=True)
class QueuePop(Law):
    mechanism = "queue_pop"
    pop_cycles: float_in(0.0, 1e6) = field(default=0.0, metadata={
        "help": "from a pop taking the head to its task starting (the head atomic's round trip, the slot read)"})
    pop_interval_cycles: float_in(0.0, 1e6) = field(default=0.0, metadata={
        "help": "how long one pop holds the queue's head: the head serves one pop per this many cycles"})
