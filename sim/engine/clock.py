"""Scheduling on SimPy time with an optional quantum.

Every future action of the model (a block starting, a queue's next
completion, a spinning block noticing its counter) goes through `call_later`.
With `quantum` > 0 the time is rounded to the nearest multiple of it (never
into the past) and all actions due at that grid point share one SimPy event:
one heap push and one step instead of one each. An action moves by at most
half a quantum either way, so the errors do not pile up along a chain of
blocks. The default (32 cycles, under 20 ns on the GPUs here) is far below
any block's duration; `quantum=0` gives exact event times.

Sharing an event is the one departure from SimPy's idiom of an event per
action, kept for speed (about two actions per event on a VGG-scale run). It
adds no ordering of its own: the actions at one instant run in the order
they were scheduled, which is the order SimPy's (time, priority, seq) key
would give them as separate events of one priority; one scheduled while its
instant is running goes to a fresh event at that instant, behind everything
already queued, as it would in SimPy. The event's value is its instant
(`Event.value`), so no float is recomputed from `env.now` to find it.

Actions are called as `fn(now, arg)`: the current time comes with the call,
so callbacks do not read `env.now` again.
"""
from __future__ import annotations

# x + 1.5 * 2**52 - 1.5 * 2**52 is x rounded to the nearest integer, half to even: what round(x) gives, as a float,
# for any |x| < 2**51, in two float operations that compile to the same two in C.
_ROUND = 6755399441055744.0


class Clock:
    __slots__ = ("env", "quantum", "pending", "run", "timeout")

    def __init__(self, env, quantum: float = 0.0):
        self.env = env
        self.quantum = quantum
        self.pending: dict[float, list] = {}
        self.run = self._run
        self.timeout = env.timeout

    def call_later(self, now: float, delay: float, fn, arg) -> None:
        """Call `fn(time, arg)` `delay` cycles after `now` (the current time), rounded to the nearest multiple
        of the quantum, never before `now`."""
        when = now + delay
        quantum = self.quantum
        if quantum:
            when = ((when / quantum + _ROUND) - _ROUND) * quantum
            if when < now:
                when = now
        items = self.pending.get(when)
        if items is None:
            self.pending[when] = [(fn, arg)]
            self.timeout(when - now, when).callbacks.append(self.run)
        else:
            items.append((fn, arg))

    def _run(self, ev) -> None:
        when = ev.value
        for fn, arg in self.pending.pop(when):
            fn(when, arg)
