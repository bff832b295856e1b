"""The one exception family the CLI turns into a one-line message and exit code 2."""


class MegasimError(Exception):
    """Bad input: unknown name, bad shape, malformed file, illegal mapping."""


class DeadlockError(MegasimError):
    """Every resident thread block spins on parents that can never be dispatched."""
