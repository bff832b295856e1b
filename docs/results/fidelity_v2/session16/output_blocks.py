"""Session 16: the non-fused output kernel's blocks of eight traced cases, traced against simulated alone under a
profile: the kernel's span, the median block's work (ready to end), the most blocks on one SM and the SMs used.
Run it with `mseg.diff` applied (git apply) to see the fix.  Usage: python output_blocks.py [PROFILE]
"""
import sys

import numpy as np

import megasim.app.calibrate.trace_law as tl
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.engine.interpreter import SimpyInterpreter

CASES = ("DenseNet", "ResNet-2", "ResNet-4", "VGG-3", "gen-n32c16h112w112k16-f6", "gen-n16c96h256w256k16-f6",
         "gen-n4c512h17w17k32-f4", "gen-n8c1024h30w30k32-f4")


def summary(start, ready, end, sm):
    per_sm = np.bincount(sm, minlength=132)
    return end.max() - start.min(), np.median(end - ready), per_sm.max(), (per_sm > 0).sum()


def main():
    spec = load_profile(sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/h200.toml").apply(load_gpu("h200"))
    meta, traces = tl.load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
    print("| case | blocks | traced span / median work us | simulated span / median work us | most on one SM, traced / simulated |")
    print("|---|---|---|---|---|")
    for case in CASES:
        rec = traces[case]["nonfused"]
        mine = rec["op"] == Op.OUTPUT_TRANSFORM
        t = summary(rec["start_us"][mine], rec["ready_us"][mine], rec["end_us"][mine], rec["sm"][mine])
        r = SimpyInterpreter(spec).run(tl.graph_of(meta[case]), None, RunConfig(launch="output_transform")).records
        s = summary(r["start_us"], r["ready_us"], r["end_us"], r["sm"])
        print(f"| {case} | {mine.sum()} | {t[0]:.1f} / {t[1]:.1f} | {s[0]:.1f} / {s[1]:.1f} | {t[2]} / {s[2]} |")


if __name__ == "__main__":
    main()
