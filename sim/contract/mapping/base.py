"""A mapping is a permutation: logical block index -> task id.

Logical order is the order blocks *start* (the megakernel takes an atomic
ticket), so it is the order the dispatcher hands them out. The one public
checker, `validate`, is run over every registered strategy in CI.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from megasim.contract.errors import MegasimError
from megasim.contract.graph import NO_COUNTER, TaskGraph
from megasim.contract.problem import OP_NAMES, Op
from megasim.contract.mapping.strategies import MAPPINGS, strategy  # noqa: F401  (strategy: its older home)


@dataclass(frozen=True, eq=False)
class Mapping:
    order: np.ndarray                     # int64[num_tasks]: block -> task
    strategy: str = "custom"
    params: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.order)

    def position(self) -> np.ndarray:
        """task -> logical block index."""
        pos = np.empty(len(self.order), dtype=np.int64)
        pos[self.order] = np.arange(len(self.order))
        return pos


def _first(idx: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:limit])
    return shown + (f", ... ({len(idx)} in all)" if len(idx) > limit else "")


def validate(graph: TaskGraph, mapping: Mapping) -> None:
    """Reject duplicates, missing or unknown tasks, and children mapped before a parent."""
    order = np.asarray(mapping.order)
    n = graph.num_tasks
    if order.ndim != 1 or not np.issubdtype(order.dtype, np.integer):
        raise MegasimError("illegal mapping: it must be a 1-D list of integer task ids")
    bad = np.flatnonzero((order < 0) | (order >= n))
    if len(bad):
        raise MegasimError(f"illegal mapping: blocks {_first(bad)} name task ids outside [0, {n})")
    counts = np.bincount(order, minlength=n)
    dup = np.flatnonzero(counts > 1)
    if len(dup):
        blocks = np.flatnonzero(np.isin(order, dup))
        raise MegasimError(f"illegal mapping: tasks {_first(dup)} appear more than once (blocks {_first(blocks)})")
    missing = np.flatnonzero(counts == 0)
    if len(missing) or len(order) != n:
        raise MegasimError(f"illegal mapping: {n - len(order) if len(order) < n else len(missing)} "
                           f"tasks missing, e.g. {_first(missing)}")
    pos = mapping.position()
    last_parent = np.full(len(graph.counter_init), -1, dtype=np.int64)
    has = graph.signals != NO_COUNTER
    np.maximum.at(last_parent, graph.signals[has], pos[has])
    for col in range(graph.waits_on.shape[1]):
        w = graph.waits_on[:, col]
        child = np.flatnonzero((w != NO_COUNTER) & (pos <= last_parent[np.maximum(w, 0)]))
        if len(child):
            t = child[np.argsort(pos[child])][0]
            parents = graph.parents_of_counter(w[t])
            late = parents[pos[parents] > pos[t]]
            raise MegasimError(
                f"illegal mapping: block {pos[t]} (task {t}, {OP_NAMES[Op(graph.op[t])]} of group "
                f"{graph.group[t]}) comes before its parent block(s) {_first(np.sort(pos[late]))}; "
                f"{len(child)} children are early in all")


def task_class(graph: TaskGraph) -> np.ndarray:
    """1 for compute-bound (GEMM) tasks, 0 for memory-bound transforms."""
    return (graph.op == Op.GEMM).astype(np.int8)


def infusible_count(graph: TaskGraph, mapping: Mapping, window: int) -> int:
    """Tasks with no task of the other resource class within +-window/2 blocks (paper 5.2).

    `window` is the number of blocks resident at once (N_CTB): tasks further
    apart than that never run together. Filter transforms always count: every
    GEMM waits for all of them, so nothing compute-bound can run beside them.
    """
    cls = task_class(graph)[mapping.order]
    half = max(1, window // 2)
    cum = np.concatenate([[0], np.cumsum(cls)])
    idx = np.arange(len(cls))
    lo, hi = np.maximum(0, idx - half), np.minimum(len(cls), idx + half + 1)
    compute_near = cum[hi] - cum[lo]
    memory_near = (hi - lo) - compute_near
    other = np.where(cls == 1, memory_near, compute_near)
    lonely = (other == 0) | (graph.op[mapping.order] == Op.FILTER_TRANSFORM)
    return int(np.count_nonzero(lonely))


def make(graph: TaskGraph, name: str, **params) -> Mapping:
    """Build a mapping with a registered strategy; unknown names list the known ones."""
    strat = MAPPINGS.get(name)
    opts = strat.make_options({k: v for k, v in params.items() if v is not None})
    order = np.asarray(strat.build(graph, opts), dtype=np.int64)
    return Mapping(order=order, strategy=name, params=asdict(opts))
