"""Blocks that start together on an SM end in their arrival order, and a kernel's last wave spreads.

    python docs/results/trace_sample/end_ranks.py [SAMPLE] [--profile P]

For each traced non-fused GEMM launch of the sample (default: the committed H100 one): the first wave's
blocks (those that started within 1 us of the launch's first), grouped by SM, their durations sorted by
when they ended (median over SMs with the full count), and how the blocks after the first wave spread over
SMs (the fewest and the most one SM ran, and the standard deviation). The same for the simulator under the profile (default: the committed
H200 one, whose SMs are the H100's; the sample's DRAM is not), with the launch simulated alone.
docs/decisions.md, "The non-fused GEMM's first wave is staggered", reads it.
"""
from __future__ import annotations

import argparse

import numpy as np

from megasim.app.calibrate.end_order import end_ranks
from megasim.app.calibrate.predict import graph_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.engine.interpreter import SimpyInterpreter


def tail_spread(rec, first_wave: int, sm_count: int) -> str:
    """The fewest and most of the blocks after the first wave that one SM ran, and their standard deviation."""
    m = rec["op"] == Op.GEMM
    later = np.argsort(rec["start_us"][m])[first_wave:]
    per_sm = np.bincount(rec["sm"][m][later], minlength=sm_count)
    return f"{per_sm.min():4d} {per_sm.max():4d} {per_sm.std():5.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sample", nargs="?", default="scenarios/calibrations/raw/h100_trace_sample.npz")
    parser.add_argument("--profile", default="scenarios/calibrations/h200.toml")
    args = parser.parse_args()
    profile = load_profile(args.profile)
    spec = profile.apply(load_gpu(profile.gpu))
    meta, traces = load_sample(args.sample)
    print(f"{'case':28s} {'blocks':>6} {'first wave':>10}  durations by end rank (us)         later blocks per SM: "
          "fewest, most, sd")
    for case, about in meta.items():
        if "nonfused" not in traces[case]:
            continue
        measured = traces[case]["nonfused"]
        ranks, wave = end_ranks(measured)
        n = int((measured["op"] == Op.GEMM).sum())
        if wave >= n:
            continue
        sim = SimpyInterpreter(spec).run(graph_of({k: about[k] for k in RUN_KEYS}), None,
                                         RunConfig(launch="gemm")).records
        sim_ranks, sim_wave = end_ranks(sim)
        for label, r, rec, w in (("trace", ranks, measured, wave), ("sim", sim_ranks, sim, sim_wave)):
            spread = tail_spread(rec, w, spec.sm_count)
            print(f"{case if label == 'trace' else '':28s} {n:6d} {w:10d}  {label:5s} "
                  f"{' '.join(f'{x:6.1f}' for x in r):34s} {spread}")


if __name__ == "__main__":
    main()
