"""Study patch: the GEMM block law's co-runner count read under age-ordered sharing (aged.py).

`trace_law.gemm_corunners` counts the GEMM blocks working beside a block, itself included: its share of the SM
under equal shares is 1/n. Under shares of GAMMA^(age rank) the block's share is w_self / sum(w), so the law's
FLOP term takes sum(w) / w_self, averaged over the block's work, in place of n (ranks by start time among the
GEMM blocks working on the SM)."""
import numpy as np
from megasim.app.calibrate import trace_law
from megasim.contract.problem import Op

GAMMA = [1.0]


def aged_share(j, i, st, rd, en):
    a, b = rd[j], en[j]
    cuts = np.unique(np.clip(np.concatenate([rd[i], en[i], [a, b]]), a, b))
    total = 0.0
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        if hi <= lo:
            continue
        mid = 0.5 * (lo + hi)
        act = i[(rd[i] <= mid) & (en[i] > mid)]
        if j not in act:
            act = np.append(act, j)
        order = act[np.lexsort((act, st[act]))]
        w = GAMMA[0] ** np.arange(len(order))
        total += (hi - lo) * w.sum() / w[np.where(order == j)[0][0]]
    return total / (b - a)


def gemm_corunners(rec, rng, with_tasks=False):
    op, sm, rd, en, st = rec["op"], rec["sm"], rec["ready_us"], rec["end_us"], rec["start_us"]
    gemms = np.where(op == Op.GEMM)[0]
    if len(gemms) > trace_law.SAMPLE_PER_LAUNCH:
        gemms = rng.choice(gemms, trace_law.SAMPLE_PER_LAUNCH, replace=False)
    by_sm = {s: np.where((sm == s) & (op == Op.GEMM))[0] for s in np.unique(sm[gemms])}
    work, n, tasks = [], [], []
    for j in gemms:
        if en[j] <= rd[j]:
            continue
        n.append(aged_share(j, by_sm[sm[j]], st, rd, en))
        work.append(en[j] - rd[j])
        tasks.append(rec["task"][j])
    out = np.array(work), np.array(n)
    return (*out, np.array(tasks)) if with_tasks else out


def install(gamma):
    GAMMA[0] = gamma
    trace_law.gemm_corunners = gemm_corunners
