"""The search loop: Optuna asks, the executor simulates, Optuna is told, the storage keeps it.

The loop runs Optuna's ask/tell interface in this process only; the
executor (a process pool, inline, or a Dask cluster) just runs
`objective.fused`. Up to one evaluation per worker is in flight. Each
sampled point goes through three gates before it costs a simulation:

1. already evaluated in this study (TPE repeats itself on a finite space):
   told the stored value, marked `cached`;
2. illegal (`space.reject_reason`): told PRUNED with the reason;
3. otherwise submitted.

Every finished evaluation is told at once, so with `--storage sqlite:///...`
it is on disk before the next one is asked for. Ctrl-C stops asking and
leaves the evaluations in flight RUNNING in the storage; the next run of the
same command marks them failed and re-queues their points first, so nothing
finished is lost and nothing unfinished is skipped. `budget` counts finished
evaluations of the study, across runs: a resumed search continues the count.
"""
from __future__ import annotations

import hashlib
import json
import queue
import warnings
from dataclasses import asdict, dataclass, field

from megasim.contract.errors import MegasimError
from megasim.app.search import objective
from megasim.app.search.space import Space, legal_points, reject_reason

METHODS = ("tpe", "random", "grid")
DONE_STATES = ("COMPLETE", "PRUNED", "FAIL")


@dataclass(frozen=True)
class SearchConfig:
    method: str = "tpe"
    budget: int | None = None       # finished evaluations in the study; default 200, or the grid's size
    jobs: int = 1
    scheduler: str | None = None    # Dask scheduler address; None: local pool of `jobs`
    storage: str | None = None      # Optuna storage URL; None: in memory
    seed: int = 0
    progress: bool = True
    connect_timeout_s: float = 3.0
    nonfused: bool = True           # also simulate each (variant, partition)'s non-fused kernels (speedup column)


@dataclass
class SearchResult:
    study_name: str
    trials: list = field(default_factory=list)  # optuna FrozenTrials, finished ones
    reference: dict | None = None                # the paper default point and its fused time
    nonfused: dict = field(default_factory=dict)  # nonfused_key(variant, partition) -> non-fused us
    interrupted: bool = False
    budget: int = 0


def spec_hash(gpu) -> str:
    doc = {k: v for k, v in asdict(gpu).items() if k != "sources"}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:8]


def study_name(problem: objective.Problem, space: Space) -> str:
    """Readable where it can be (the variants and modes searched: F4/static when pinned, F2,4,6/... when
    searched); the space's hash keeps every space, pinned or searched, in a study of its own."""
    L = problem.layer
    values = {p.name: p.values for p in space.params}
    return (f"megasim-search/{L.name}/{L.n},{L.c},{L.h},{L.w},{L.k}/F{','.join(map(str, values['variant']))}/"
            f"{','.join(values['mode'])}/{problem.gpu.name}-{spec_hash(problem.gpu)}/{problem.policy}/"
            f"{space.strategy}-{space.key()}")


def nonfused_key(variant, part) -> str:
    """The non-fused kernels' key: they depend on the variant and the partition, not on the mode."""
    return json.dumps({"variant": variant.m, "partition": part.to_dict()}, sort_keys=True)


def point_key(point: dict) -> str:
    """A point as a dict key: the same parameters and values give the same string."""
    return json.dumps(point, sort_keys=True)


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
    if method == "tpe":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)
    raise MegasimError(f"unknown search method {method!r}; known: {', '.join(METHODS)}")


def _executor(config: SearchConfig):
    if config.scheduler:
        from megasim.app.search.dask_runner import connect
        ex = connect(config.scheduler, config.connect_timeout_s)
        return ex, max(1, ex.workers)
    from megasim.app.search.pool import local_executor
    return local_executor(config.jobs), max(1, config.jobs)


class _Loop:
    """One run of the ask/evaluate/tell loop over one study."""

    def __init__(self, problem, space, config, study, executor, workers):
        self.problem, self.space, self.config = problem, space, config
        self.study, self.executor, self.workers = study, executor, workers
        self.done_q: queue.Queue = queue.Queue()
        self.inflight: dict = {}         # future -> ("fused", trial, point) | ("nonfused", key)
        self.cache: dict = {}            # point key -> (value, user attrs) of COMPLETE trials
        self.covered: set = set()        # point keys finished in any state
        self.done = 0
        self.best = float("inf")
        self.nonfused = dict(study.user_attrs.get("nonfused", {}))
        self.nonfused_pending: set = set()

    def load(self) -> None:
        from optuna.trial import TrialState
        stale = []
        for t in self.study.get_trials(deepcopy=False):
            if t.state == TrialState.RUNNING:
                stale.append(t)
                continue
            if t.state == TrialState.FAIL and "error" not in t.user_attrs:
                continue  # interrupted; its point was re-queued when it was marked
            if t.state.name in DONE_STATES:
                self.done += 1
                key = point_key(t.params)
                self.covered.add(key)
                if t.state == TrialState.COMPLETE:
                    self.cache[key] = (t.value, dict(t.user_attrs))
                    self.best = min(self.best, t.value)
        for t in stale:
            self.study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)
            self.study.enqueue_trial(t.params, skip_if_exists=False)

    def submit(self, fn, args, tag) -> None:
        fut = self.executor.submit(fn, *args)
        self.inflight[fut] = tag
        fut.add_done_callback(self.done_q.put)

    def fused_inflight(self) -> int:
        return sum(1 for tag in self.inflight.values() if tag[0] == "fused")

    def want_more(self, target: int) -> bool:
        if self.done + self.fused_inflight() >= target:
            return False
        if self.config.method == "grid":
            busy = {point_key(tag[2]) for tag in self.inflight.values() if tag[0] == "fused"}
            return len(self.covered | busy) < self.space.size
        return True

    def ask_one(self) -> None:
        from optuna.trial import TrialState
        trial = self.study.ask()
        point = {p.name: trial.suggest_categorical(p.name, list(p.values)) for p in self.space.searched}
        key = point_key(point)
        if key in self.cache:
            value, attrs = self.cache[key]
            for k, v in {**attrs, "cached": True}.items():
                trial.set_user_attr(k, v)
            self.study.tell(trial, value)
            self._finished(key, value)
            return
        why = reject_reason(self.space, point, self.problem.layer, self.problem.gpu)
        if why:
            trial.set_user_attr("rejected", why)
            self.study.tell(trial, state=TrialState.PRUNED)
            self._finished(key, None)
            return
        problem, part, opts = self.problem.at(self.space, point)
        nkey = nonfused_key(problem.variant, part)
        if self.config.nonfused and nkey not in self.nonfused and nkey not in self.nonfused_pending:
            self.nonfused_pending.add(nkey)
            self.submit(objective.nonfused_us, (problem, part), ("nonfused", nkey))
        self.submit(objective.fused, (problem, part, opts), ("fused", trial, point))

    def _finished(self, key, value) -> None:
        self.done += 1
        self.covered.add(key)
        if value is not None:
            self.best = min(self.best, value)

    def collect(self, fut) -> None:
        from optuna.trial import TrialState
        tag = self.inflight.pop(fut)
        if fut.cancelled():
            return
        exc = fut.exception()
        if tag[0] == "nonfused":
            self.nonfused_pending.discard(tag[1])
            if exc is None:
                self.nonfused[tag[1]] = fut.result()
                self.study.set_user_attr("nonfused", self.nonfused)
            return
        _, trial, point = tag
        key = point_key(point)
        if exc is not None:
            trial.set_user_attr("error", f"{type(exc).__name__}: {exc}".splitlines()[0])
            self.study.tell(trial, state=TrialState.FAIL)
            self._finished(key, None)
            return
        stats = fut.result()
        for k, v in stats.items():
            trial.set_user_attr(k, v)
        self.study.tell(trial, stats["fused_us"])
        self.cache[key] = (stats["fused_us"], stats)
        self._finished(key, stats["fused_us"])

    def run(self, target: int, progress) -> None:
        while True:
            while self.fused_inflight() < self.workers and self.want_more(target):
                self.ask_one()
                progress(self.done, self.best)
            if not self.inflight:
                if not self.want_more(target):
                    return
                continue
            try:
                fut = self.done_q.get(timeout=0.25)
            except queue.Empty:
                progress(self.done, self.best)
                continue
            if fut in self.inflight:
                self.collect(fut)
            progress(self.done, self.best)


def _reference(loop: _Loop) -> dict | None:
    """The paper's default parameters on the base partition: evaluated once per study."""
    ref = loop.study.user_attrs.get("reference")
    if ref is not None:
        return ref
    space, problem = loop.space, loop.problem
    point = space.default_point()
    problem, part, opts = problem.at(space, point)
    why = reject_reason(space, point, problem.layer, problem.gpu)
    ref = {"point": space.complete(point), "partition": part.to_dict(), "options": opts, "rejected": why}
    if why is None:
        ref.update(loop.executor.submit(objective.fused, problem, part, opts).result())
    loop.study.set_user_attr("reference", ref)
    return ref


def _progress_bar(enabled: bool, total: int, start: int, label: str):
    from contextlib import nullcontext
    if not enabled:
        return nullcontext(lambda done, best: None)
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), TextColumn("ETA"),
                   TimeRemainingColumn(), console=Console(stderr=True))
    task = bar.add_task(label, total=total, completed=start, best="-")

    def update(done, best):
        bar.update(task, completed=done, best=f"{best:.1f} us" if best < float("inf") else "-")

    class _Ctx:
        def __enter__(self):
            bar.start()
            return update

        def __exit__(self, *exc):
            bar.stop()
            return False
    return _Ctx()


def run_search(problem: objective.Problem, space: Space, config: SearchConfig) -> SearchResult:
    """Search `space` for the mapping with the least simulated fused time; see the module docstring."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if config.method not in METHODS:
        raise MegasimError(f"unknown search method {config.method!r}; known: {', '.join(METHODS)}")
    if config.budget is not None and config.budget < 1:
        raise MegasimError(f"--budget must be >= 1, got {config.budget}")
    if config.jobs < 1:
        raise MegasimError(f"--jobs must be >= 1, got {config.jobs}")
    legal, example = legal_points(space, problem.layer, problem.gpu, limit=0)  # one legal point will do
    if legal == 0:
        raise MegasimError(f"the search space has no legal point ({space.size} points; e.g. {example})")
    target = config.budget or (space.size if config.method == "grid" else 200)
    name = study_name(problem, space)
    executor, workers = _executor(config)
    try:
        study = optuna.create_study(study_name=name, storage=config.storage, direction="minimize",
                                    sampler=_sampler(config.method, space, config.seed), load_if_exists=True)
    except (ValueError, ImportError, optuna.exceptions.StorageInternalError) as exc:
        executor.shutdown(cancel=True)
        raise MegasimError(f"optuna storage {config.storage!r}: {str(exc).splitlines()[0]}") from None
    previous = len(study.get_trials(deepcopy=False))
    if config.method == "grid":
        # The grid's seed fixes which grid id is which point: the stored ids must keep their meaning.
        grid_seed = study.user_attrs.get("grid_seed", config.seed)
        study.set_user_attr("grid_seed", grid_seed)
        if grid_seed != config.seed:
            study.sampler = _sampler("grid", space, grid_seed)
    elif previous:
        # A resumed study must not replay the seeded sequence of the run before it.
        study.sampler = _sampler(config.method, space, config.seed + previous)
    loop = _Loop(problem, space, config, study, executor, workers)
    result = SearchResult(study_name=name, budget=target)
    try:
        loop.load()
        result.reference = _reference(loop)
        if not previous and config.method != "grid" and result.reference.get("rejected") is None \
                and space.contains(space.default_point()):
            study.enqueue_trial(space.default_point())
        with _progress_bar(config.progress, target, loop.done, f"{problem.layer.name} {config.method}") as update:
            loop.run(target, update)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        executor.shutdown(cancel=result.interrupted)
    result.nonfused = loop.nonfused
    result.trials = [t for t in study.get_trials(deepcopy=False) if t.state.name in DONE_STATES
                     and (t.state.name != "FAIL" or "error" in t.user_attrs)]
    return result
