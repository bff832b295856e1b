"""Block-dispatch policies: which SM gets the next logical block.

The hardware block scheduler is undocumented; these are the hypotheses the
simulator can run, behind one registry. Each is a small class, registered
with `@policy(name, Options)` and built as `cls(gpu, slots_per_sm, opts)`,
with `take(block) -> sm or -1` (-1: nothing free, the dispatcher waits) and
`release(sm)` when a block on `sm` finishes. A policy that needs inputs of
its own (replay: a measured trace) declares them as options.
"""
from megasim.engine.dispatch.base import DISPATCH_POLICIES, make_policy
from megasim.engine.dispatch import first_free, gpc_interleaved, in_order_round_robin, replay  # noqa: F401

__all__ = ["DISPATCH_POLICIES", "make_policy"]
