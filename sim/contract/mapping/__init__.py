"""Task -> thread-block mappings: one strategy per module, all in `MAPPINGS`."""
from megasim.contract.mapping.base import MAPPINGS, Mapping, infusible_count, make, validate
from megasim.contract.mapping import interleave, paper, random_topo, sequential  # noqa: F401  (registration)

__all__ = ["MAPPINGS", "Mapping", "infusible_count", "make", "validate"]
