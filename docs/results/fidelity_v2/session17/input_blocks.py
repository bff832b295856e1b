"""The input transform's traced block work (ready to end, median) in the megakernel and in its own kernel, against
the same launches simulated, per traced case in the static mode.

    python input_blocks.py PROFILE"""
import sys
import numpy as np
from megasim.app.calibrate.predict import mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import graph_of, load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.engine.interpreter import SimpyInterpreter
spec = load_profile(sys.argv[1]).apply(load_gpu("h200"))
meta, traces = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
op=Op.INPUT_TRANSFORM
print('case | megakernel: traced, simulated median us | own kernel: traced, simulated | input tasks')
for case in meta:
    if '-' in case and case.split('-')[-1] in ('persistent','ready_queue','dig0','dig128','dig196'): continue
    about=meta[case]; g=graph_of(about)
    mapping=mapping_of(about)
    row=[]
    for kind in ('fused','nonfused'):
        ex=SimpyInterpreter(spec).run(g, mapping if kind=='fused' else None, RunConfig(mode='static') if kind=='fused' else RunConfig(launch='nonfused'))
        s=ex.records; t=traces[case][kind]
        mt=t['op']==op; ms=s['op']==op
        if not mt.any(): row.append('-'); continue
        wt=t['end_us'][mt]-t['ready_us'][mt]; ws=s['end_us'][ms]-s['ready_us'][ms]
        row.append(f"{np.median(wt):6.2f} {np.median(ws):6.2f} ({np.median(ws)/np.median(wt)-1:+5.0%})")
    L=g.layer
    print(f"{case[:24]:24s} n{L.n} c{L.c} k{L.k} h{L.h} | {row[0]} | {row[1]} | {int((g.op==op).sum())}")
