"""The megakernel's DRAM read bytes in the model (L2 misses) for the Nsight Compute cases of
docs/results/write_traffic_h200 (traffic.md: `dram__bytes_read.sum`), at several l2_usable_fraction values.

    python docs/results/fidelity_v2/session12/l2reads.py PROFILE 0.75,0.5,0.3,0.15
"""
import sys, dataclasses
sys.path.insert(0,'docs/results/write_traffic_h200')
from launch import CASES, layer_of
from megasim.app.catalog import partition_for, load_gpu
from megasim.app.calibrate.profile import load_profile
from megasim.contract.graph import build_graph
from megasim.contract.mapping import make
from megasim.contract.problem import WinogradVariant
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter
base = load_profile(sys.argv[1]).apply(load_gpu('h200'))
for frac in [float(x) for x in sys.argv[2].split(',')]:
    spec = dataclasses.replace(base, l2_usable_fraction=frac)
    out=[]
    for name, params in CASES:
        layer, m = layer_of(name)
        g = build_graph(layer, WinogradVariant(m), partition_for(layer, 'h200'))
        ex = SimpyInterpreter(spec).run(g, make(g, 'paper', **params), RunConfig())
        miss = sum(v['miss_bytes'] for v in ex.native.l2_stats.values())/1e6
        out.append('%s%s %.0f MB %.0fus'%(name[:14], ''.join(f'-{k}{v}' for k,v in params.items()), miss, ex.time_us))
    print('frac %.2f: '%frac + ' | '.join(out), flush=True)
