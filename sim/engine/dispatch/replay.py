"""SM placement from a measured trace: block i runs on the SM it ran on.

If that SM has no free slot the dispatcher waits for one, keeping the
logical order, so a replay reproduces the measured placement exactly and the
order up to the model's timing.
"""
from megasim.engine.dispatch.base import DISPATCH_POLICIES
from megasim.contract.errors import MegasimError


@DISPATCH_POLICIES.register("replay")
class Replay:
    def __init__(self, gpu, slots_per_sm, replay_sms=None):
        if replay_sms is None:
            raise MegasimError("the replay dispatch policy needs a measured trace (SM per block)")
        if len(replay_sms) and (min(replay_sms) < 0 or max(replay_sms) >= gpu.sm_count):
            raise MegasimError(f"replay trace names SMs outside 0..{gpu.sm_count - 1}")
        self.sms = list(replay_sms)
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
