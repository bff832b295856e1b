"""python opwork.py PROFILE: ResNet-1 fused block work summed per SM by task type (H200 trace against PROFILE), and the L2 bytes."""
import sys
from megasim.app.calibrate.replay_check import RUN_KEYS
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.trace_law import load_sample
from megasim.app.catalog import load_gpu
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter
meta, tr = load_sample("scenarios/calibrations/raw/h200_trace_sample.npz")
spec = load_profile(sys.argv[1]).apply(load_gpu("h200"))
names=['filt','input','gemm','out']
for case in ('ResNet-1-dig128','ResNet-1-dig196','ResNet-1'):
    run={k:meta[case][k] for k in RUN_KEYS if k in meta[case]}
    ex=SimpyInterpreter(spec).run(graph_of(run),mapping_of(run),RunConfig())
    for name,rec in (('trace',tr[case]['fused']),('model',ex.records)):
        w=rec['end_us']-rec['ready_us']
        print('%-16s %-5s '%(case,name)+' '.join('%s %6.1f'%(names[o],w[rec['op']==o].sum()/132) for o in range(4)))
    st=ex.native.l2_stats; print('   l2', {k:(round(v,3) if isinstance(v,float) else v) for k,v in (st.items() if isinstance(st,dict) else [])})
