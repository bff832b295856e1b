"""Session 16: are the megakernel's GEMM blocks slower than the non-fused GEMM kernel's for the same work?

The committed GEMM laws (`trace_law.gemm_body_laws`) are fitted on the trace sample's fused and non-fused launches
together. Fitted on each alone, per body: fixed and step cycles, efficiency, and the median per-launch error of the
joint law on each kind of launch (its sign says which way that kind leans).  Usage: python gemm_split.py [SAMPLE]
"""
import sys

import numpy as np

import megasim.app.calibrate.trace_law as tl

CLOCK, PEAK = 1979.494, 256.0


def only(traces, kind):
    return {case: {k: v for k, v in launches.items() if k.split("-")[0] == kind or
                   (kind == "fused" and k in ("fused", "persistent", "ready_queue"))}
            for case, launches in traces.items()}


def main():
    meta, traces = tl.load_sample(sys.argv[1] if len(sys.argv) > 1 else "scenarios/calibrations/raw/h200_trace_sample.npz")
    joint = tl.gemm_body_laws(meta, traces, CLOCK, PEAK)
    for kind in ("fused", "nonfused"):
        sub = {c: {k: v for k, v in ls.items() if k == kind} for c, ls in traces.items()}
        laws = tl.gemm_body_laws(meta, sub, CLOCK, PEAK)
        for body, (fixed, step, eff, errors) in laws.items():
            jf, js, je, jerr = joint[body]
            signed = [e for (case, launch), e in jerr.items() if launch == kind]
            print(f"{kind:8s} {body:16s} fixed {fixed:7.0f} step {step:6.0f} eff {eff:.3f} | joint law on these launches: "
                  f"median {np.median(signed):+.3f} (n={len(signed)})")


if __name__ == "__main__":
    main()
