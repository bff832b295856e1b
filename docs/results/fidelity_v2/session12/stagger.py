import numpy as np
from megasim.app.calibrate.trace_law import load_sample
meta,traces=load_sample('scenarios/calibrations/raw/h200_trace_sample.npz')
names=['filter','input','gemm','output']
for case in meta:
    if meta[case].get('mode','static')!='static' or case.startswith('ResNet-1-'): continue
    for launch in ('nonfused',):
      rec=traces[case][launch]
      for opn in (1,2,3):
        m=rec['op']==opn; s=rec['start_us'][m]; e=rec['end_us'][m]; sm=rec['sm'][m]
        t0=s.min(); s=s-t0; e=e-t0
        first=s<1.0
        ratios=[]
        for q in np.unique(sm):
            k=(sm==q)&first
            if k.sum()>=2:
                ee=np.sort(e[k]); ratios.append(ee/ee[-1])
        if not ratios: continue
        n=max(len(r) for r in ratios); R=[r for r in ratios if len(r)==n]
        print('%-28s %-6s res%d  ends/last: %s'%(case,names[opn],n,' '.join('%.2f'%x for x in np.median(R,axis=0))))
