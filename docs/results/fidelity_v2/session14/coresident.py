"""Input and output transform blocks of a fused static launch by how many blocks worked beside them on their SM:
traced, and simulated under a profile with the first wave's tickets raced (ticketrace.py) or not.

    python docs/results/fidelity_v2/session14/coresident.py PROFILE [MIX] [CASE ...]

Per task type and overlap-weighted count of working blocks on the SM (itself included, rounded), the median work
(ready to end, us) and the number of blocks: where the model's sharing of an SM by transforms goes wrong.
"""
import sys
from pathlib import Path

import numpy as np

here = Path(__file__).resolve().parent
sys.path[:0] = [str(here), str(here.parent / "session13")]
from megasim.app.calibrate.predict import graph_of, mapping_of  # noqa: E402
from megasim.app.calibrate.profile import load_profile  # noqa: E402
from megasim.app.calibrate.replay_check import RUN_KEYS  # noqa: E402
from megasim.app.calibrate.trace_law import load_sample, overlap  # noqa: E402
from megasim.app.catalog import load_gpu  # noqa: E402
from megasim.contract.interpreter import RunConfig  # noqa: E402
from megasim.contract.problem import OP_NAMES, Op  # noqa: E402
from megasim.engine.interpreter import SimpyInterpreter  # noqa: E402


def by_company(rec, op) -> dict:
    out: dict = {}
    sm, rd, en = rec["sm"], rec["ready_us"], rec["end_us"]
    for j in np.flatnonzero(rec["op"] == op):
        if en[j] <= rd[j]:
            continue
        here = sm == sm[j]
        n = int(round(overlap(rd[j], en[j], rd[here], en[here])))
        out.setdefault(n, []).append(en[j] - rd[j])
    return {n: (float(np.median(v)), len(v)) for n, v in sorted(out.items())}


def _print(case, traced, simulated):
    """One line per transform type: work by company, traced / simulated."""
    cell = lambda d, n: f"{d[n][0]:5.1f} ({d[n][1]:4d})" if n in d else " " * 12  # noqa: E731
    for op in (Op.INPUT_TRANSFORM, Op.OUTPUT_TRANSFORM):
        t, s = by_company(traced, op), by_company(simulated, op)
        print(f"{case:28s} {OP_NAMES[op]:16s} " + " | ".join(
            f"{n}: {cell(t, n)} / {cell(s, n)}" for n in sorted(set(t) | set(s))))


def _setup(profile_path):
    profile = load_profile(profile_path)
    return profile.apply(load_gpu(profile.gpu)), *load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")


def main(profile_path, mix=None, cases=()):
    if mix is not None:
        import ticketrace
        ticketrace.install(mix)
    spec, meta, traces = _setup(profile_path)
    for case in cases or [c for c, m in meta.items() if m.get("mode", "static") == "static"]:
        run = {k: meta[case][k] for k in RUN_KEYS if k in meta[case]}
        _print(case, traces[case]["fused"], SimpyInterpreter(spec).run(graph_of(run), mapping_of(run), RunConfig()).records)


def nonfused(profile_path, cases):
    """The same table for the non-fused input and output kernels."""
    spec, meta, traces = _setup(profile_path)
    for case in cases:
        run = {k: meta[case][k] for k in RUN_KEYS if k in meta[case]}
        _print(case, traces[case]["nonfused"],
               SimpyInterpreter(spec).run(graph_of(run), None, RunConfig(launch="nonfused")).records)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "-" else None, sys.argv[3:])
