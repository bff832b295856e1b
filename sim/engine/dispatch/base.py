"""Shared pieces of the dispatch policies."""
from __future__ import annotations

from collections import deque

from megasim.contract.options import Configurable, NoOptions
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


def policy(name: str, options: type = NoOptions):
    """Register a policy class, built as `cls(gpu, slots_per_sm, opts)`, under `name` with its options dataclass."""
    def deco(cls):
        DISPATCH_POLICIES.register(name)(Configurable(cls, options, f"dispatch policy {name!r}"))
        return cls
    return deco


def make_policy(name: str, gpu, slots_per_sm: int, options: dict | None = None):
    entry = DISPATCH_POLICIES.get(name)
    return entry.build(gpu, slots_per_sm, entry.make_options(options or {}))
