"""The interpreters by name: the one place that sees both executors, so the registry lives here.

Each is constructed with its own inputs (the engine: a GPU model and a dispatch policy; the GPU: its
build options) and then run through `megasim.contract.interpreter`'s protocol.
"""
from __future__ import annotations

from megasim.contract.registry import Registry
from megasim.engine.interpreter import SimpyInterpreter
from megasim.gpu.interpreter import CudaInterpreter, EmulatorInterpreter

INTERPRETERS: Registry = Registry("interpreter")
for _cls in (SimpyInterpreter, EmulatorInterpreter, CudaInterpreter):
    INTERPRETERS.register(_cls.name)(_cls)

__all__ = ["INTERPRETERS", "SimpyInterpreter", "EmulatorInterpreter", "CudaInterpreter"]
