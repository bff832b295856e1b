"""Task -> thread-block mappings: one strategy per module, all in `MAPPINGS`."""
from sim.mapping.base import MAPPINGS, Mapping, infusible_count, make, validate
from sim.mapping import interleave, paper, random_topo, sequential  # noqa: F401  (registration)

__all__ = ["MAPPINGS", "Mapping", "infusible_count", "make", "validate"]
