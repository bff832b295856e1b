import json,sys,numpy as np
d=json.load(open(sys.argv[1]))
names=['filter','input','gemm','output']
for split in ('train','heldout'):
    xs=[x for x in d if x['split']==split]
    print(split,len(xs))
    for i,n in enumerate(names):
        e=np.array([np.log(x['pred'][i]/x['meas'][i]) for x in xs])
        print('  %-7s rms log %.3f  median %+.3f  p10 %+.3f p90 %+.3f'%(n,np.sqrt(np.mean(e**2)),np.median(e),*np.percentile(e,[10,90])))
    e=np.array([sum(x['pred'])/x['graph']-1 for x in xs]); print('  sum of kernels vs graph: MAPE %.3f'%np.mean(abs(e)))
