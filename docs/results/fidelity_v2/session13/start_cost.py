"""A GEMM block's start to ready when its counters were already zero (ticket, task map, two counter reads),
traced, against how many input transforms were working on the whole chip at its start.

    python docs/results/fidelity_v2/session13/start_cost.py [CASE...]
"""
import sys
import numpy as np
from megasim.app.calibrate.trace_law import graph_of, load_sample
from megasim.contract.graph import NO_COUNTER
from megasim.contract.problem import Op

meta, traces = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
for case in sys.argv[1:] or ["ResNet-1-dig128", "ResNet-1-dig196", "ResNet-1", "ResNet-2", "VGG-1", "YOLOv3-1"]:
    g = graph_of(meta[case]); rec = traces[case]["fused"]
    task, op, st, rd, en = rec["task"], rec["op"], rec["start_us"], rec["ready_us"], rec["end_us"]
    zero = np.zeros(len(g.counter_init)); sig = g.signals[task]; has = sig != NO_COUNTER
    np.maximum.at(zero, sig[has], en[has])
    waits = g.waits_on[task]
    met = np.ones(len(task), bool)
    for k in range(2):
        c = waits[:, k]; h = c != NO_COUNTER
        met[h] &= zero[c[h]] < st[h]
    ins = op == Op.INPUT_TRANSFORM
    chip_in = np.array([((rd[ins] <= t) & (en[ins] > t)).sum() for t in st])
    gem = (op == Op.GEMM) & met
    sr = rd - st
    line = f"{case:18s} GEMMs ready at start: {gem.sum():5d}, start->ready median {np.median(sr[gem]):.2f} us"
    for lo, hi in ((0, 1), (1, 60), (60, 200), (200, 10000)):
        q = gem & (chip_in >= lo) & (chip_in < hi)
        if q.sum() >= 20:
            line += f" | inputs on chip {lo}-{hi}: {np.median(sr[q]):.2f} ({q.sum()})"
    print(line)
