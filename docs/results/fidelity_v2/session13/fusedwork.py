"""Study patch: a task type's blocks do `factor` times their work inside the megakernel (a launch that polls
counters), on top of the engine's own per-block factors (session 13)."""
import numpy as np
import megasim.engine.core as core
from megasim.contract.problem import Op

_run_scale, _Columns = core.run_scale, core.BlockColumns
_fused = {}


def install(factors: dict) -> None:
    ops = {Op[name.upper()]: x for name, x in factors.items()}

    def run_scale(kernels, gpu, seed, *rest):
        _fused["mask"] = np.concatenate([np.full(len(k.tasks), bool(k.check_deps)) for k in kernels])
        return _run_scale(kernels, gpu, seed, *rest)

    def columns(order, graph, gpu, scale):
        extra = np.ones(len(order))
        op = graph.op[order]
        for o, x in ops.items():
            extra[(op == o) & _fused["mask"]] = x
        return _Columns(order, graph, gpu, extra if scale is None else np.asarray(scale) * extra)

    core.run_scale, core.BlockColumns = run_scale, columns
