"""What a run that stopped with blocks unfinished says: which blocks wait, on what, and why it never comes."""
from __future__ import annotations

from megasim.contract.graph import NO_COUNTER
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.scheduling import ran_dry


def deadlock_message(machine) -> str:
    """The event queue is empty and blocks are unfinished: name the first spinning blocks and their missing
    parents (or, in a ready-queue kernel, the tasks that never became ready)."""
    cols, gpu, graph = machine.blocks, machine.gpu, machine.graph
    at = gpu.cycles_to_us(machine.env.now)
    n = len(cols)
    if machine.queue:
        never = [b for b in range(n) if cols.sm[b] < 0]
        return ran_dry(never, f" at {at:.1f} us")
    pos = {task: b for b, task in enumerate(cols.order)}
    spinning = [b for b in range(n) if cols.blocked[b] > 0]
    parts = []
    for b in spinning[:3]:
        task = cols.order[b]
        for c in graph.waits_on[task].tolist():
            if c != NO_COUNTER and machine.remaining[c] > 0:
                parents = [pos[p] for p in graph.parents_of_counter(c).tolist() if cols.t_end[pos[p]] < 0]
                undispatched = [p for p in parents if cols.sm[p] < 0]
                parts.append(f"block {b} (task {task}, {OP_NAMES[Op(graph.op[task])]}) waits on counter {c} "
                             f"for parent blocks {parents[:5]}{'...' if len(parents) > 5 else ''}"
                             f" ({len(undispatched)} never dispatched)")
    more = f"; {len(spinning) - 3} more spinning" if len(spinning) > 3 else ""
    return (f"deadlock at {at:.1f} us: {len(spinning)} resident blocks spin "
            f"on parents that cannot be dispatched: " + "; ".join(parts) + more)
