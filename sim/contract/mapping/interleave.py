"""Proportional mixing with no distance (paper Fig. 3b).

Filter transforms first, then group by group: its S_I input transforms, its
S_G GEMMs, its S_O output transforms. The task types stay in proportion, but
every child sits right behind its parents, so children spin.
"""
from megasim.contract.mapping.strategies import strategy
from megasim.contract.problem import Op


@strategy("interleave")
def interleave(graph, opts):
    import numpy as np
    g = graph.geometry
    per_group = [graph.tasks_of(op).reshape(g.n_g, -1) for op in (Op.INPUT_TRANSFORM, Op.GEMM, Op.OUTPUT_TRANSFORM)]
    body = np.concatenate(per_group, axis=1).ravel()
    return np.concatenate([graph.tasks_of(Op.FILTER_TRANSFORM), body])
