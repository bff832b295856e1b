"""Stage 4: what only whole builds show, fitted on `<gpu>_builds.json`'s training layers: the warp-tiled GEMM
body's laws (`body_law`), then the ready queue's pop law (`queue_law`) under them."""
from __future__ import annotations

from megasim.app.calibrate.body_law import fit_warp_laws
from megasim.app.calibrate.queue_law import fit_queue_law


def fit_builds(rows: list[dict], spec, pool=None, log=print) -> tuple[dict, dict]:
    """(the [model] entries stage 4 sets, each fit's rms log error); ({}, {}) without builds."""
    if not rows:
        return {}, {}
    warp, warp_errors = fit_warp_laws(rows, spec, pool, log)
    queue, queue_errors = fit_queue_law(rows, spec.with_model(**warp) if warp else spec, pool, log)
    return {**warp, **queue}, {**warp_errors, **queue_errors}
