"""The megakernel's input blocks and their company, traced and simulated: per case, the median input block work and,
averaged over its blocks, the GEMM and input blocks working on its SM and the input blocks working on the chip
(overlap-weighted, itself included). Static launches under the trace sample's mappings.

    python input_company.py PROFILE CASE...
"""
import sys, numpy as np
from megasim.app.calibrate.predict import mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import graph_of, load_sample, overlap
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.contract.problem import Op
from megasim.engine.interpreter import SimpyInterpreter
spec = load_profile(sys.argv[1]).apply(load_gpu('h200'))
meta, traces = load_sample('scenarios/calibrations/raw/h200_trace_sample.npz')
rng=np.random.default_rng(0)
def stats(r):
    op,sm,rd,en=r['op'],r['sm'],r['ready_us'],r['end_us']
    inp=np.where(op==Op.INPUT_TRANSFORM)[0]
    if len(inp)>300: inp=rng.choice(inp,300,replace=False)
    ng,ni,mi,w=[],[],[],[]
    allin=np.where(op==Op.INPUT_TRANSFORM)[0]
    for j in inp:
        a,b=rd[j],en[j]
        if b<=a: continue
        here=sm==sm[j]
        g=np.where(here&(op==Op.GEMM))[0]; i=np.where(here&(op==Op.INPUT_TRANSFORM))[0]
        ng.append(overlap(a,b,rd[g],en[g])); ni.append(overlap(a,b,rd[i],en[i])); mi.append(overlap(a,b,rd[allin],en[allin])); w.append(b-a)
    return np.median(w), np.mean(ng), np.mean(ni), np.mean(mi)
print('case | work tr/sim | gemms on SM tr/sim | inputs on SM tr/sim | inputs on chip tr/sim')
for case in sys.argv[2:]:
    about=meta[case]; g=graph_of(about); m=mapping_of(about)
    s=SimpyInterpreter(spec).run(g,m,RunConfig(mode='static')).records; t=traces[case]['fused']
    a=stats({k:t[k] for k in ('op','sm','ready_us','end_us')}); b=stats({k:s[k] for k in ('op','sm','ready_us','end_us')})
    print(f"{case:10s} | {a[0]:5.1f}/{b[0]:5.1f} | {a[1]:4.2f}/{b[1]:4.2f} | {a[2]:4.2f}/{b[2]:4.2f} | {a[3]:6.1f}/{b[3]:6.1f}")
