"""The registry of mapping strategies: each name with the function that builds its order and its options.

It loads no NumPy, and neither does registering a strategy (NumPy is imported
inside the build functions), so the CLI can list every strategy and its
options (`megasim simulate --help`) without loading the numerics.
"""
from megasim.contract.options import Configurable, NoOptions
from megasim.contract.registry import Registry

MAPPINGS: Registry = Registry("mapping strategy")


def strategy(name: str, options: type = NoOptions):
    """Register `fn(graph, opts) -> order` under `name` with its options dataclass."""
    def deco(fn):
        MAPPINGS.register(name)(Configurable(fn, options, f"mapping strategy {name!r}"))
        return fn
    return deco
