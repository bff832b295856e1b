"""Task -> thread-block mappings: one strategy per module, all in `MAPPINGS`.

Importing this package registers every strategy without loading NumPy
(megasim.contract.mapping.strategies says why); `Mapping`, `make`,
`validate` and `infusible_count` come from megasim.contract.mapping.base,
loaded on first use.
"""
from megasim.contract.mapping.strategies import MAPPINGS
from megasim.contract.mapping import interleave, paper, random_topo, sequential  # noqa: F401  (registration)

_BASE = ("Mapping", "infusible_count", "make", "validate")
__all__ = ["MAPPINGS", *_BASE]


def __getattr__(name: str):
    if name in _BASE:
        from megasim.contract.mapping import base
        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
