"""The engine's clock and processor-sharing queues against simple exact references.

Each reference is the definition run event by event with no cleverness: the clock as one heap of
(time, order scheduled) entries with the time rounded to the quantum, the queues as jobs whose rates are
recomputed at every arrival, completion and release, stepping straight to the next of those. The engine's
versions (one shared SimPy event per instant, one virtual clock per queue, lazy timers) must give the same
times: the clock exactly, the queues to float rounding.
"""
import heapq

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from megasim.engine.clock import Clock
from megasim.engine.psqueue import PSQueue
from megasim.engine.weighted_psqueue import WeightedPSQueue

TIMES = st.floats(0.0, 1000.0, allow_nan=False).map(lambda x: round(x, 1))
AMOUNTS = st.floats(1.0, 1000.0, allow_nan=False).map(lambda x: round(x, 1))
EXAMPLES = settings(max_examples=150, deadline=None)


# ---- the clock ------------------------------------------------------------------------------------

def clock_reference(actions, quantum):
    """actions: (delay from 0, delay of its follow-up or None). The log of (time, action) in run order."""
    def at(now, delay):
        when = now + delay
        if quantum:
            when = round(when / quantum) * quantum
            when = max(when, now)
        return when
    heap, seq, log = [], 0, []
    for i, (delay, _) in enumerate(actions):
        heapq.heappush(heap, (at(0.0, delay), seq, i))
        seq += 1
    while heap:
        now, _, i = heapq.heappop(heap)
        log.append((now, i))
        follow = actions[i % len(actions)][1] if i < len(actions) else None
        if follow is not None:
            heapq.heappush(heap, (at(now, follow), seq, i + len(actions)))
            seq += 1
    return log


def clock_engine(actions, quantum):
    env, log = simpy.Environment(), []
    clock = Clock(env, quantum)

    def act(now, i):
        log.append((now, i))
        follow = actions[i][1] if i < len(actions) else None
        if follow is not None:
            clock.call_later(now, follow, act, i + len(actions))
    for i, (delay, _) in enumerate(actions):
        clock.call_later(0.0, delay, act, i)
    env.run()
    return log


@EXAMPLES
@given(actions=st.lists(st.tuples(TIMES, st.none() | TIMES), min_size=1, max_size=25),
       quantum=st.sampled_from([0.0, 1.0, 32.0]))
def test_clock_runs_each_action_at_its_rounded_time_in_the_order_scheduled(actions, quantum):
    assert clock_engine(actions, quantum) == clock_reference(actions, quantum)


# ---- the queues -----------------------------------------------------------------------------------

def sharing_reference(jobs, rate, holds=None):
    """Exact processor sharing. jobs: (arrival, amount, weight); `rate(active_weights, w)` is a job's rate.
    A job holds its weight from arrival until `holds[j]` after it finishes (None: until it finishes).
    Returns each job's finish time."""
    left = {j: amount for j, (_, amount, _) in enumerate(jobs)}
    holding, finish, releases, t = set(), {}, {}, 0.0
    arrivals = sorted(range(len(jobs)), key=lambda j: jobs[j][0])
    while left or releases:
        weights = [jobs[j][2] for j in holding]
        rates = {j: rate(weights, jobs[j][2]) for j in left if j in holding}
        steps = [left[j] / r for j, r in rates.items() if r > 0]
        nxt = min([jobs[a][0] - t for a in arrivals] + steps + [r - t for r in releases.values()])
        for j, r in rates.items():
            left[j] -= r * nxt
        t += nxt
        for j in [j for j in rates if left[j] <= 1e-9 * (1 + jobs[j][1])]:
            del left[j]
            finish[j] = t
            if holds is None:
                holding.discard(j)
            else:
                releases[j] = t + holds[j]
        for j in [j for j, r in releases.items() if r <= t]:
            del releases[j]
            holding.discard(j)
        while arrivals and jobs[arrivals[0]][0] <= t:
            holding.add(arrivals.pop(0))
    return [finish[j] for j in range(len(jobs))]


def run_queue(make, jobs, holds=None):
    """Submit each job at its arrival through a Clock of quantum 0; release it `holds[j]` after it ends."""
    env = simpy.Environment()
    clock = Clock(env, 0.0)
    finish = [None] * len(jobs)
    queue = None

    def done(now, j):
        finish[j] = now
        if holds is not None:
            clock.call_later(now, holds[j], queue.release, j)
    queue = make(clock, memoryview(np.ones(len(jobs), dtype=np.uint8)), done)  # the engine's column types
    for j, (arrival, amount, _) in enumerate(jobs):
        clock.call_later(0.0, arrival, lambda now, j: queue.submit(now, jobs[j][1], j), j)
    env.run()
    return finish


JOBS = st.lists(st.tuples(TIMES, AMOUNTS, st.sampled_from([1.0, 2.0, 5.0])), min_size=1, max_size=12)


@EXAMPLES
@given(jobs=JOBS, capacity=st.sampled_from([1.0, 4.0, 10.0]), cap=st.sampled_from([0.5, 2.0, 1e9]))
def test_psqueue_is_egalitarian_sharing_capped_per_job(jobs, capacity, cap):
    """n jobs at once each get min(capacity / n, the per-job cap)."""
    got = run_queue(lambda clock, pending, done: PSQueue(clock, capacity, cap, pending, done), jobs)
    want = sharing_reference(jobs, lambda ws, w: min(capacity / len(ws), cap, capacity))
    assert got == pytest.approx(want, rel=1e-6, abs=1e-6)


@EXAMPLES
@given(jobs=JOBS, capacity=st.sampled_from([1.0, 4.0]), data=st.data())
def test_weighted_psqueue_shares_by_weight_until_each_block_releases(jobs, capacity, data):
    """A job of weight w gets capacity x w / W, W the weights of every job submitted and not yet released."""
    holds = data.draw(st.lists(TIMES, min_size=len(jobs), max_size=len(jobs)))
    weight = memoryview(np.array([w for _, _, w in jobs]))
    got = run_queue(lambda clock, pending, done: WeightedPSQueue(clock, capacity, weight, pending, done),
                    jobs, holds)
    want = sharing_reference(jobs, lambda ws, w: capacity * w / sum(ws), holds)
    assert got == pytest.approx(want, rel=1e-6, abs=1e-6)
