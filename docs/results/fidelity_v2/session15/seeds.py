"""The paper runs under a profile at three seeds of the run (the per-block work draw and the ticket race): held-out
fused MAPE and within-layer Spearman, to tell a refit's gain from its draw (session 15).

    python docs/results/fidelity_v2/session15/seeds.py PROFILE
"""
import json, sys, numpy as np
from concurrent.futures import ProcessPoolExecutor
from scipy.stats import spearmanr
from megasim.app.catalog import load_gpu
from megasim.app.calibrate.profile import load_profile
from megasim.app.calibrate.predict import graph_of, mapping_of
from megasim.contract.interpreter import RunConfig
from megasim.engine.interpreter import SimpyInterpreter
runs=json.load(open('scenarios/calibrations/raw/h200_runs.json'))['runs']


def one(args):
    prof, seed, i = args
    p=load_profile(prof); spec=p.apply(load_gpu(p.gpu)); r=runs[i]
    return SimpyInterpreter(spec).run(graph_of(r), mapping_of(r), RunConfig(mode=r.get('mode','static'), seed=seed)).time_us

if __name__ == '__main__':
    prof=sys.argv[1]
    held=[i for i,r in enumerate(runs) if r.get('split')=='heldout']
    with ProcessPoolExecutor(2) as ex:
        for seed in (0,1,2):
            pred=list(ex.map(one,[(prof,seed,i) for i in range(len(runs))]))
            e=[abs(pred[i]/runs[i]['fused_us']-1) for i in held]
            by={}
            for i,r in enumerate(runs): by.setdefault(r['layer']['name'],[]).append((pred[i], r['fused_us']))
            sp=[spearmanr(*zip(*v))[0] for v in by.values()]
            print(prof.split('/')[-2][:12], 'seed',seed,'heldout fused MAPE %.2f%%'%(100*np.mean(e)), 'sp>=.8', sum(s>=0.8 for s in sp), '>=.9', sum(s>=0.9 for s in sp), flush=True)
