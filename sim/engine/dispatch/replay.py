"""SM placement from a measured trace: block i runs on the SM it ran on.

If that SM has no free slot the dispatcher waits for one, keeping the
logical order, so a replay reproduces the measured placement exactly and the
order up to the model's timing. The trace is this policy's own option.
"""
from dataclasses import dataclass

from megasim.contract.errors import MegasimError
from megasim.contract.options import option
from megasim.contract.records import load_trace
from megasim.engine.dispatch.base import policy


@dataclass(frozen=True)
class ReplayOptions:
    trace: str = option("", "a measured trace JSON (per-TB records) whose SM placement to reuse")


@policy("replay", ReplayOptions)
class Replay:
    def __init__(self, gpu, slots_per_sm, opts):
        if not opts.trace:
            raise MegasimError("the replay dispatch policy needs a measured trace: --opt trace=PATH "
                               "(or --replay-trace PATH)")
        sms = load_trace(opts.trace)["sm"].tolist()
        if len(sms) and (min(sms) < 0 or max(sms) >= gpu.sm_count):
            raise MegasimError(f"replay trace names SMs outside 0..{gpu.sm_count - 1}")
        self.sms = sms
        self.free = [slots_per_sm] * gpu.sm_count

    def take(self, block):
        if block >= len(self.sms):
            raise MegasimError(f"replay trace covers {len(self.sms)} blocks; block {block} has no SM")
        sm = self.sms[block]
        if self.free[sm] == 0:
            return -1
        self.free[sm] -= 1
        return sm

    def release(self, sm):
        self.free[sm] += 1
