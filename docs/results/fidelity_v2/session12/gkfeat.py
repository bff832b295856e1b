import json,sys,numpy as np
d=json.load(open(sys.argv[1])); i=int(sys.argv[2])
rows=[]
for x in d:
    L=x['layer'];P=x['partition'];v=x['variant']
    a=v+2; t=((L['h']+v-1)//v)*((L['w']+v-1)//v)*L['n']
    e=np.log(x['pred'][i]/x['meas'][i])
    rows.append((e,x['shape'],x['split'],L['n'],L['c'],L['k'],t,v,x['meas'][i],x['pred'][i],P['tiles_per_group'],P['gemm_k_per_task']))
rows.sort()
for r in rows: print('%+.3f %-30s %-7s n%-4d c%-5d k%-5d tiles%-7d F%d meas %8.1f pred %8.1f tpg %d gk %d'%r)
