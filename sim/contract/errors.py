"""The one exception family the CLI turns into a one-line message and exit code 2 (`MegasimError`, defined in
`megasim.io.errors`, whose readers raise it too), and the simulation's own."""
from megasim.io.errors import MegasimError


class DeadlockError(MegasimError):
    """Every resident thread block spins on parents that can never be dispatched."""
