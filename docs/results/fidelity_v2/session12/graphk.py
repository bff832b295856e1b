import json,sys
from megasim.app.calibrate.predict import predict_kernel_in_graph
from megasim.app.calibrate.profile import load_profile
from megasim.app.catalog import load_gpu
from megasim.contract.problem import Op
prof=sys.argv[1] if len(sys.argv)>1 else 'scenarios/calibrations/h200.toml'
spec=load_profile(prof).apply(load_gpu('h200'))
out=[]
for line in open('scenarios/calibrations/raw/h200_kernel_graph_times.jsonl'):
    s=json.loads(line)
    run={'layer':s['layer'],'variant':s['variant'],'partition':s['partition']}
    pred=[predict_kernel_in_graph(run,op,spec) for op in Op]
    out.append(dict(shape=s['shape'],split=s['split'],layer=s['layer'],variant=s['variant'],partition=s['partition'],meas=s['graph_kernels_us'],pred=pred,graph=s['graph_us']))
json.dump(out,open(sys.argv[2],'w'))
