"""The megakernel's scheduling modes by name (megasim.contract.scheduling says what each one does), and the
default block-dispatch policy (megasim.engine.dispatch holds the policies).

The names live apart from the scheduling and engine code so that the CLI can offer them (`--mode`,
`--policy`) without loading NumPy.
"""
from megasim.contract.errors import MegasimError

MODES = ("static", "persistent", "ready_queue")
RESIDENT_MODES = ("persistent", "ready_queue")  # the grid is what fits at once; blocks loop over tasks

# The policy the calibrated profiles were fitted under, so every command that simulates (simulate, search,
# validate, compare) predicts what the profile's MAPE was measured on (docs/decisions.md).
DEFAULT_POLICY = "in_order_round_robin"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise MegasimError(f"unknown scheduling mode {mode!r}; known: {', '.join(MODES)}")
    return mode
