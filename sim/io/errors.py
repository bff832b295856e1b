"""The one exception family the CLI turns into a one-line message and exit code 2.

It lives at the bottom because the file readers and writers raise it; `megasim.contract.errors` names it for
the layers above, beside the contract's own errors.
"""


class MegasimError(Exception):
    """Bad input: unknown name, bad shape, malformed file, illegal mapping."""
