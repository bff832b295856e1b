"""`megasim.torch`: the PyTorch drop-in's public name; everything lives in `megasim.app.torch`.

    import megasim.torch as mtorch
    report = mtorch.convert(model)

It is a layer of its own above the application (pyproject.toml's layers
contract), so importing it loads nothing the application does not.
"""
from megasim.app.torch import (NEEDS_TORCH, Schedule, Schedules, ScheduleWarning, TorchMissing, __all__,  # noqa: F401
                               __getattr__, release, runtime_reason, static_reason)
