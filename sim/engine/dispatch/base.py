"""Shared pieces of the dispatch policies."""
from __future__ import annotations

from collections import deque

from megasim.contract.registry import Registry

DISPATCH_POLICIES: Registry = Registry("dispatch policy")


class FreeSlotFifo:
    """Free slots in the order they appeared: a freed slot goes to the back.

    `initial` is the order of the first wave, one entry per slot.
    """

    def __init__(self, initial):
        self.free = deque(initial)

    def take(self, block: int) -> int:
        return self.free.popleft() if self.free else -1

    def release(self, sm: int) -> None:
        self.free.append(sm)


def make_policy(name: str, gpu, slots_per_sm: int, replay_sms=None):
    cls = DISPATCH_POLICIES.get(name)
    return cls(gpu, slots_per_sm, replay_sms)
