"""One search: Optuna asks, the executor simulates, Optuna is told, the storage keeps it.

The loop (`loop.Loop`) runs on an in-memory study that `store` loads from
the durable storage and copies finished trials back to, one commit per
trial on a writer thread. Ctrl-C stops asking, tells the evaluations in
flight FAIL as interrupted and writes everything told; the next run of the
same command re-queues the interrupted points first, so nothing finished is
lost and nothing unfinished is skipped. `budget` counts finished
evaluations of the study (interrupted ones excepted), across runs: a
resumed search continues the count.

The executor (a process pool, inline for one job, or Dask) may be passed
in, so that a network search keeps one pool or cluster for all its layers.
The caller holds the output folder's lock (`lock.FolderLock`) while a
durable storage is in use: that is what makes RUNNING trials found there
abandoned ones.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict, dataclass, field, replace

from megasim.contract.errors import MegasimError
from megasim.app.search import objective
from megasim.app.search.loop import Loop, nonfused_key, point_key  # noqa: F401  (re-exported)
from megasim.app.search.space import PROBLEM_VALUES, Space, legal_points

METHODS = ("tpe", "random", "grid")


@dataclass(frozen=True)
class SearchConfig:
    method: str = "tpe"
    budget: int | None = None       # finished evaluations in the study; default 200, or the grid's size
    jobs: int = 1
    scheduler: str | None = None    # Dask: "local", "local:N" or a scheduler address; None: local pool of `jobs`
    storage: str | None = None      # journal file or Optuna RDB URL (store.durable_url); None: in memory
    seed: int = 0
    progress: bool = True
    connect_timeout_s: float = 3.0
    nonfused: bool = True           # also simulate each point's non-fused time (the torch schedules skip it)


@dataclass
class SearchResult:
    study_name: str
    trials: list = field(default_factory=list)  # optuna FrozenTrials, finished ones (interrupted included)
    reference: dict | None = None                # the paper default point and its fused time
    nonfused: dict = field(default_factory=dict)  # nonfused_key(variant, partition) -> non-fused us
    interrupted: bool = False
    budget: int = 0


def require_optuna():
    try:
        import optuna
    except ImportError:
        raise MegasimError("search needs Optuna: pip install \"optuna>=3.5\"") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def check_config(config: SearchConfig) -> None:
    """What can be refused before anything is created or started."""
    if config.method not in METHODS:
        raise MegasimError(f"unknown search method {config.method!r}; known: {', '.join(METHODS)}")
    if config.budget is not None and config.budget < 1:
        raise MegasimError(f"--budget must be >= 1, got {config.budget}")
    if config.jobs < 1:
        raise MegasimError(f"--jobs must be >= 1, got {config.jobs}")
    if config.scheduler is not None:
        from megasim.app.search.dask_runner import local_workers
        local_workers(config.scheduler, config.jobs)


def open_executor(config: SearchConfig):
    """The config's executor: a Dask cluster (started or attached to), or the local pool of `jobs`."""
    if config.scheduler:
        from megasim.app.search.dask_runner import connect, local_workers, start_local
        n = local_workers(config.scheduler, config.jobs)
        return start_local(n) if n else connect(config.scheduler, config.connect_timeout_s)
    from megasim.app.search.pool import local_executor
    return local_executor(config.jobs)


def spec_hash(gpu) -> str:
    doc = {k: v for k, v in asdict(gpu).items() if k != "sources"}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:8]


def study_name(problem: objective.Problem, space: Space) -> str:
    """Readable where it can be (the build axes searched: fused/F4/static/generic when pinned,
    fused,nonfused/F2,4,6/... when searched); the space's hash keeps every space, pinned or searched, in a
    study of its own."""
    L = problem.layer
    values = {p.name: p.values for p in space.params}
    axes = "/".join(("F" if axis == "variant" else "") + ",".join(map(str, values[axis])) for axis in PROBLEM_VALUES)
    return (f"megasim-search/{L.name}/{L.n},{L.c},{L.h},{L.w},{L.k}/{axes}/"
            f"{problem.gpu.name}-{spec_hash(problem.gpu)}{_gain(problem)}/{problem.policy}/"
            f"{space.strategy}-{space.key()}")


def _gain(problem) -> str:
    """The mapping-gain share the objective counts, where it is not all of it: a study keeps its values."""
    return "" if problem.mapping_gain == 1 else f"-gain{problem.mapping_gain:.4f}"


def _sampler(method: str, space: Space, seed: int):
    import optuna
    if method == "grid":
        class Grid(optuna.samplers.GridSampler):
            # Optuna's GridSampler stops the study when the grid runs out, which only works inside
            # study.optimize; this loop counts coverage itself.
            def after_trial(self, study, trial, state, values):
                pass
        return Grid(space.grid(), seed=seed)
    if method == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)


def _study_sampler(config: SearchConfig, space: Space, previous: int, attrs: dict):
    """The sampler, and the study attributes to keep. The grid's seed fixes which grid id is which point,
    so a study keeps its first; a resumed TPE or random study must not replay the seeded sequence."""
    if config.method == "grid":
        seed = attrs.get("grid_seed", config.seed)
        return _sampler("grid", space, seed), {"grid_seed": seed}
    return _sampler(config.method, space, config.seed + previous), {}


def run_search(problem: objective.Problem, space: Space, config: SearchConfig, executor=None) -> SearchResult:
    """Search `space` for the mapping with the least simulated fused time; see the module docstring."""
    require_optuna()
    check_config(config)
    legal, example = legal_points(space, problem.layer, problem.gpu, limit=0)  # one legal point will do
    if legal == 0:
        raise MegasimError(f"the search space has no legal point ({space.size} points; e.g. {example})")
    from megasim.app.search.store import durable_url, open_durable
    name = study_name(problem, space)
    result = SearchResult(study_name=name, budget=config.budget or (space.size if config.method == "grid" else 200))
    own = executor is None
    if own:
        executor = open_executor(config)
    try:
        url = durable_url(config.storage)
        durable = open_durable(url, name) if url else None
        _run(problem, space, replace(config, storage=url), durable, executor, result)
    finally:
        if own:
            executor.shutdown(cancel=result.interrupted)
    return result


def _run(problem, space, config, durable, executor, result: SearchResult) -> None:
    from megasim.app.search.progress import progress_bar
    from megasim.app.search.store import Writer, live_copy
    previous = len(durable.get_trials(deepcopy=False)) if durable is not None else 0
    sampler, attrs = _study_sampler(config, space, previous, durable.user_attrs if durable is not None else {})
    live = live_copy(durable, result.study_name, sampler)
    writer = Writer(durable, config.storage, previous) if durable is not None else None
    loop = Loop(problem, space, config, live, executor, max(1, executor.workers), writer)
    try:
        for key, value in attrs.items():
            loop.set_attr(key, value)
        loop.load()
        loop.start_reference(fresh=not previous)
        label = f"{problem.layer.name} {config.method}"
        with progress_bar(config.progress, result.budget, loop.done, label) as update:
            loop.run(result.budget, update)
    except KeyboardInterrupt:
        result.interrupted = True
        loop.stop()
    finally:
        if writer is not None:
            writer.close()
    result.reference = loop.reference
    result.nonfused = loop.nonfused
    result.trials = [t for t in live.get_trials(deepcopy=False) if t.state.is_finished()]
