"""Study patch: stage 2 keeps the input transform's DRAM access efficiency at a pinned value and fits the rest.

The reading it tested: in the device's single-wave input launches (device/input_per_sm.json) each extra block per
SM adds the time of its bytes at 4.3-4.7 TB/s on F(4) and F(6), which looked like an access efficiency near 1.0.
Nsight Compute then showed those launches' stores staying in L2 (docs/calibration-analysis.md, session 18, item 3),
so the reading is withdrawn and the runs made with this patch (`d*`) are a record, not evidence."""
from megasim.app.calibrate import fit, run
from megasim.contract.problem import OP_NAMES, Op

NAME = OP_NAMES[Op.INPUT_TRANSFORM]


def install(value: float) -> None:
    original_with, original_fit = fit._with_efficiency, fit.fit_compute_efficiency

    def with_efficiency(spec, op, eff, **extra):
        if op == Op.INPUT_TRANSFORM and "dram_access_efficiency" in extra:
            extra["dram_access_efficiency"] = {**extra["dram_access_efficiency"], NAME: value}
        return original_with(spec, op, eff, **extra)

    def fit_compute_efficiency(*args, **kwargs):
        fitted, errors = original_fit(*args, **kwargs)
        fitted["dram_access_efficiency"][NAME] = value
        return fitted, errors

    fit._with_efficiency = with_efficiency
    fit.fit_compute_efficiency = run.fit_compute_efficiency = fit_compute_efficiency
