"""The model's laws, one file each, registered by name (`MODEL_LAWS`): a profile's `[model]` names those it
uses in `laws`, and each law's constants sit in a table of its name. `base` says what a law is."""
from megasim.engine.laws.base import MECHANISMS, MODEL_LAWS, Law
from megasim.engine.laws import (first_wave_stagger, gemm_body_laws, gemm_neighbour_stretch, queue_pop,  # noqa: F401
                                 resident_sharing, tensor_core_gemm)

__all__ = ["MECHANISMS", "MODEL_LAWS", "Law"]
