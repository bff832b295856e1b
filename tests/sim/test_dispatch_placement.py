"""Where each registered dispatch policy puts the blocks of a small grid, from the policy's own definition.

The GPU here has 4 SMs of 2 slots, in GPCs of 2 SMs, with SM 3 leading the first wave. Blocks 0-7 fill
every slot; then the slots on SM 2 and SM 0 free, in that order, and blocks 8 and 9 take them; block 10
finds nothing free (-1: the dispatcher waits). Each policy's expected placement is written from its
docstring, not read from a run; a policy registered without one here fails, so a new policy gets one.
"""
import json
from types import SimpleNamespace

import pytest

from megasim.contract.records import TB_RECORD
from megasim.engine.dispatch import DISPATCH_POLICIES, make_policy

GPU = SimpleNamespace(sm_count=4, sms_per_gpc=2, first_wave_lead_sms=(3,))
SLOTS = 2
FREED = (2, 0)
TRACED = [1, 1, 3, 3, 2, 0, 2, 0, 1, 3, 0]  # the SM each block ran on, for the replay policy


def _trace(tmp_path):
    rows = [{**{name: 0 for name in TB_RECORD.names}, "block": b, "task": b, "sm": sm}
            for b, sm in enumerate(TRACED)]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"records": rows}))
    return str(path)


# name -> (options, placement of blocks 0-7, of blocks 8-10 after FREED)
EXPECTED = {
    # one slot per SM per round in SM order, then the slot that freed first
    "in_order_round_robin": (lambda tmp: {}, [0, 1, 2, 3, 0, 1, 2, 3], [2, 0, -1]),
    # the lowest-numbered SM with a free slot
    "first_free": (lambda tmp: {}, [0, 0, 1, 1, 2, 2, 3, 3], [0, 2, -1]),
    # the lead SM, then TPC pairs round robin across GPCs (GPC 0: SMs 0-1, GPC 1: SM 2); then the slot freed first
    "gpc_interleaved": (lambda tmp: {}, [3, 0, 1, 2, 3, 0, 1, 2], [2, 0, -1]),
    # each block on its traced SM; block 8 is bound for SM 1, which is full, so the dispatcher waits
    "replay": (lambda tmp: {"trace": _trace(tmp)}, [1, 1, 3, 3, 2, 0, 2, 0], [-1, -1, -1]),
}


def _place(name, options):
    p = make_policy(name, GPU, SLOTS, options)
    first = [p.take(b) for b in range(GPU.sm_count * SLOTS)]
    for sm in FREED:
        p.release(sm)
    later = []
    for b in range(len(first), len(first) + 3):
        sm = p.take(b)
        later.append(sm)
        if sm < 0 and name == "replay":
            break
    return first, later + [-1] * (3 - len(later))


@pytest.mark.parametrize("name", DISPATCH_POLICIES.names())
def test_each_policy_places_a_small_grid_as_it_is_defined(name, tmp_path):
    assert name in EXPECTED, f"dispatch policy {name!r} has no expected placement here: add one from its definition"
    options, first, later = EXPECTED[name]
    assert _place(name, options(tmp_path)) == (first, later)


def test_replay_taking_any_free_sm_when_the_traced_one_is_full(tmp_path):
    """`when_full=any`: block 8 is bound for the full SM 1 and takes the first SM with room (SM 0), block 9
    finds its traced SM 3 full and takes SM 2, and block 10 finds nothing free."""
    first, later = _place("replay", {"trace": _trace(tmp_path), "when_full": "any"})
    assert (first, later) == ([1, 1, 3, 3, 2, 0, 2, 0], [0, 2, -1])
