"""Prototype: output_law's four-term block law fitted on the input and filter transforms."""
import sys, numpy as np
from megasim.app.calibrate import trace_law as T
from megasim.contract.problem import Op
from megasim.contract.work import issued_flops, serial_steps

def transform_law(meta, traces, clock_mhz, sm_peak, op, seed=0, per_launch=800, launches=("fused", "nonfused")):
    rng = np.random.default_rng(seed)
    xs, ys, ws, tags = [], [], [], []
    for case, problem in meta.items():
        g = T.graph_of(problem)
        flops, steps = issued_flops(g), serial_steps(g)
        moved = sum(g.bytes_per_task())
        for launch, rec in traces[case].items():
            if launch not in launches: continue
            o, sm, rd, en, task = rec["op"], rec["sm"], rec["ready_us"], rec["end_us"], rec["task"]
            outs = np.where(o == op)[0]
            picked = rng.choice(outs, per_launch, replace=False) if len(outs) > per_launch else outs
            picked = picked[en[picked] > rd[picked]]
            for j in picked:
                a, b, t = rd[j], en[j], task[j]
                here = sm == sm[j]
                n, m = T.overlap(a, b, rd[here], en[here]), T.overlap(a, b, rd[outs], en[outs])
                xs.append([1.0, steps[t], n * flops[t] / sm_peak, m * moved[t]])
                ys.append((b - a) * clock_mhz)
                ws.append(1.0 / ((b - a) * clock_mhz * np.sqrt(len(picked))))
                tags.append((case, launch))
    coef, errors = T._fit_blocks(xs, ys, ws, tags)
    return coef, errors

if __name__ == "__main__":
    meta, traces = T.load_sample(sys.argv[1])
    for op in (Op.FILTER_TRANSFORM, Op.INPUT_TRANSFORM, Op.OUTPUT_TRANSFORM):
        for launches in (("fused", "nonfused"),):
            coef, err = transform_law(meta, traces, 1980.0, 256, op, launches=launches)
            e = np.abs(list(err.values()))
            fe = [abs(v) for (c, l), v in err.items() if l == "fused"]
            print(op.name, launches, "fixed %.0f step %.1f eff %.4f chip %.1f" % (coef[0], coef[1], 1/coef[2], 1/coef[3] if coef[3] else float('inf')),
                  "median err %.1f%% p90 %.1f%% fused median %.1f%%" % (100*np.median(e), 100*np.percentile(e, 90), 100*np.median(fe)))
