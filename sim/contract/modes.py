"""The megakernel's scheduling modes by name; megasim.contract.scheduling says what each one does.

The names live apart from the scheduling code so that the CLI can offer them
(`--mode`) without loading NumPy.
"""
from megasim.contract.errors import MegasimError

MODES = ("static", "persistent", "ready_queue")
RESIDENT_MODES = ("persistent", "ready_queue")  # the grid is what fits at once; blocks loop over tasks


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise MegasimError(f"unknown scheduling mode {mode!r}; known: {', '.join(MODES)}")
    return mode
