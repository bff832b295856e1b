"""SM placement from a measured trace: block i runs on the SM it ran on.

If that SM has no free slot the dispatcher waits for one, keeping the
logical order, so a replay reproduces the measured placement exactly and the
order up to the model's timing. The trace is this policy's own option.

That wait makes a replay sensitive to the model's timing on each SM: where
the model runs an SM's blocks a little slower than the hardware did, every
later block waits behind the first one bound for it, which the hardware,
handing each block to whichever SM is free, never does. `when_full=any`
follows the trace where the traced SM has room and otherwise takes the
first SM that does (`first_free`), so the placement is the trace's wherever
the model's timing allows it (docs/results/trace_sample/replay.py compares both).
"""
from dataclasses import dataclass

from megasim.contract.errors import MegasimError
from megasim.contract.options import option
from megasim.contract.records import load_trace
from megasim.engine.dispatch.base import policy

WHEN_FULL = ("wait", "any")


@dataclass(frozen=True)
class ReplayOptions:
    trace: str = option("", "a measured trace JSON (per-TB records) whose SM placement to reuse")
    when_full: str = option("wait", "when the traced SM has no free slot: wait for it, or take any free SM")


@policy("replay", ReplayOptions)
class Replay:
    def __init__(self, gpu, slots_per_sm, opts):
        if not opts.trace:
            raise MegasimError("the replay dispatch policy needs a measured trace: --opt trace=PATH "
                               "(or --replay-trace PATH)")
        sms = load_trace(opts.trace)["sm"].tolist()
        if len(sms) and (min(sms) < 0 or max(sms) >= gpu.sm_count):
            raise MegasimError(f"replay trace names SMs outside 0..{gpu.sm_count - 1}")
        if opts.when_full not in WHEN_FULL:
            raise MegasimError(f"replay option when_full must be one of {', '.join(WHEN_FULL)}, not {opts.when_full!r}")
        self.sms = sms
        self.free = [slots_per_sm] * gpu.sm_count
        self.any = opts.when_full == "any"

    def take(self, block):
        if block >= len(self.sms):
            raise MegasimError(f"replay trace covers {len(self.sms)} blocks; block {block} has no SM")
        sm = self.sms[block]
        if self.free[sm] == 0:
            if not self.any:
                return -1
            sm = next((i for i, n in enumerate(self.free) if n), -1)
            if sm < 0:
                return -1
        self.free[sm] -= 1
        return sm

    def release(self, sm):
        self.free[sm] += 1
