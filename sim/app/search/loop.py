"""One run of the ask/evaluate/tell loop over one (in-memory) study.

Optuna asks in this thread only; the executor (a process pool, inline, or
a Dask cluster) just runs `objective.evaluate` and `objective.nonfused_us`.
Up to `depth` evaluations are in flight, twice the workers, so a worker
finishing never waits for this thread to tell and ask again (TPE's
constant liar accounts for the ones in flight). Each sampled point goes
through three gates before it costs a simulation:

1. already evaluated in this study (TPE repeats itself on a finite space;
   every sample of a non-fused build is its one canonical point,
   `Space.canonical`): told the stored value, marked `cached`;
2. illegal (`space.reject_reason`): told PRUNED with the reason;
3. otherwise submitted.

Points asked for first (`pending`) are the paper default of a new study,
which is then also the study's reference, every other build of the space at
the default mapping, the non-fused ones first (`Space.build_points`: so,
with a budget of at least their number, the search's pick is never predicted
slower than the best discrete build, and with less it still sees every
non-fused build), and the points a stopped run left unfinished. Every told trial goes to the writer (`store.Writer`).
"""
from __future__ import annotations

import queue

from megasim.app.search import objective
from megasim.app.search.lock import owner
from megasim.app.search.space import reject_reason

DONE_STATES = ("COMPLETE", "PRUNED", "FAIL")


def point_key(point: dict) -> str:
    """A point as a dict key: the same parameters and values give the same string."""
    import json
    return json.dumps(point, sort_keys=True)


def outcome(trial) -> str:
    """ok, rejected, failed (the simulation raised) or interrupted (in flight when a run stopped)."""
    state = trial.state.name
    if state == "FAIL":
        return "failed" if "error" in trial.user_attrs else "interrupted"
    return {"COMPLETE": "ok", "PRUNED": "rejected"}.get(state, state.lower())


class Loop:
    def __init__(self, problem, space, config, study, executor, workers, writer=None):
        self.problem, self.space, self.config = problem, space, config
        self.study, self.executor, self.writer = study, executor, writer
        self.depth = 2 * workers if workers > 1 else 1
        self.done_q: queue.Queue = queue.Queue()
        self.inflight: dict = {}         # future -> ("point", trial, point) | ("nonfused", key) | ("reference",)
        self.asked: dict = {}            # trial number -> optuna Trial, until told
        self.cache: dict = {}            # point key -> (value, user attrs) of COMPLETE trials
        self.covered: set = set()        # point keys finished in any state but interrupted
        self.pending: list = []          # points to ask for before sampling
        self.done = 0
        self.best = float("inf")
        self.nonfused = dict(study.user_attrs.get("nonfused", {}))
        self.nonfused_pending: set = set()
        self.reference = study.user_attrs.get("reference")
        self._ref_key = None
        self.sizes: dict = {}            # (variant, partition) -> size refusal or None (space.reject_reason)

    def key(self, point: dict) -> str:
        """The cache key of a sampled point: its canonical point's."""
        return point_key(self.space.canonical(point))

    def load(self) -> None:
        """Count, cache and cover what the study holds; queue the points of interrupted trials again."""
        again = []
        for t in self.study.get_trials(deepcopy=False):
            kind, key = outcome(t), self.key(t.params)
            if kind == "interrupted":
                again.append((key, t.params))
            elif t.state.name in DONE_STATES:
                self._finished(key, t.value if kind == "ok" else None)
                if kind == "ok":
                    self.cache[key] = (t.value, dict(t.user_attrs))
        names = {p.name for p in self.space.searched}
        for key, params in again:
            if key not in self.covered and set(params) == names and params not in self.pending:
                self.pending.append(params)

    def start_reference(self, fresh: bool) -> None:
        """The paper's default point on the base partition, simulated once per study: as the first trial
        of a fresh study where the space holds it, else as a job of its own."""
        if self.reference is not None:
            return
        space, point = self.space, self.space.default_point()
        problem, part, opts = self.problem.at(space, point)
        why = reject_reason(space, point, problem.layer, problem.gpu)
        self._ref = {"point": space.complete(point), "partition": part.to_dict(), "options": opts, "rejected": why}
        if why is not None:
            self._set_reference({})
        elif fresh and self.config.method != "grid" and space.contains(point):
            self._ref_key = self.key(point)
            self.pending[:0] = space.build_points()
        else:
            self.submit(objective.evaluate, (problem, part, opts), ("reference",))

    def _set_reference(self, stats: dict) -> None:
        self.reference = {**self._ref, **stats}
        self._ref_key = None
        self.set_attr("reference", self.reference)

    def set_attr(self, key: str, value) -> None:
        self.study.set_user_attr(key, value)
        if self.writer is not None:
            self.writer.attr(key, value)

    def submit(self, fn, args, tag) -> None:
        fut = self.executor.submit(fn, *args)
        self.inflight[fut] = tag
        fut.add_done_callback(self.done_q.put)

    def points_inflight(self) -> int:
        return sum(1 for tag in self.inflight.values() if tag[0] == "point")

    def want_more(self, target: int) -> bool:
        if self.done + self.points_inflight() >= target:
            return False
        if self.config.method == "grid":
            busy = {self.key(tag[2]) for tag in self.inflight.values() if tag[0] == "point"}
            return len(self.covered | busy) < self.space.size
        return True

    def ask_one(self) -> None:
        from optuna.trial import TrialState
        if self.pending:
            self.study.enqueue_trial(self.pending.pop(0), skip_if_exists=False)
        trial = self.study.ask()
        self.asked[trial.number] = trial
        point = {p.name: trial.suggest_categorical(p.name, list(p.values)) for p in self.space.searched}
        key = self.key(point)
        if key in self.cache:
            value, attrs = self.cache[key]
            self._tell(trial, key, value, {**attrs, "cached": True})
            return
        why = reject_reason(self.space, point, self.problem.layer, self.problem.gpu, self.sizes)
        if why:
            self._tell(trial, key, None, {"rejected": why}, TrialState.PRUNED)
            return
        problem, part, opts = self.problem.at(self.space, point)
        nkey = nonfused_key(problem.variant, part, problem.gemm)
        if (self.config.nonfused and problem.launch == "fused" and nkey not in self.nonfused
                and nkey not in self.nonfused_pending):
            self.nonfused_pending.add(nkey)
            self.submit(objective.nonfused_us, (problem, part), ("nonfused", nkey))
        self.submit(objective.evaluate, (problem, part, opts), ("point", trial, point))

    def _tell(self, trial, key, value, attrs: dict, state=None) -> None:
        for k, v in attrs.items():
            trial.set_user_attr(k, v)
        frozen = self.study.tell(trial, value, state=state)
        del self.asked[trial.number]
        if self.writer is not None:
            self.writer.trial(frozen)
        if state is None or state.name != "FAIL" or "error" in attrs:
            self._finished(key, value)

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
                self.set_attr("nonfused", dict(self.nonfused))
            return
        error = None if exc is None else f"{type(exc).__name__}: {exc}".splitlines()[0]
        stats = fut.result() if exc is None else {}
        if tag[0] == "reference" or (tag[0] == "point" and self.key(tag[2]) == self._ref_key):
            self._set_reference(stats if error is None else {"error": error})
        if tag[0] == "reference":
            if error is None:
                self.cache[self._key_of_ref()] = (stats["time_us"], stats)
            return
        _, trial, point = tag
        key = self.key(point)
        if error is not None:
            self._tell(trial, key, None, {"error": error}, TrialState.FAIL)
            return
        self._tell(trial, key, stats["time_us"], stats)
        self.cache[key] = (stats["time_us"], stats)
        problem, part, _ = self.problem.at(self.space, point)
        if problem.launch == "nonfused":
            self.nonfused[nonfused_key(problem.variant, part, problem.gemm)] = stats["time_us"]
            self.set_attr("nonfused", dict(self.nonfused))

    def _key_of_ref(self) -> str:
        return self.key({p.name: self.reference["point"][p.name] for p in self.space.searched})

    def stop(self) -> None:
        """Ctrl-C: tell every asked, untold trial FAIL as interrupted, with who ran it."""
        from optuna.trial import TrialState
        for trial in list(self.asked.values()):
            self._tell(trial, None, None, {"interrupted": owner()}, TrialState.FAIL)

    def run(self, target: int, progress) -> None:
        while True:
            while self.points_inflight() < self.depth and self.want_more(target):
                self.ask_one()
                progress(self.done, self.best)
            if self.writer is not None:
                self.writer.check()
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


def nonfused_key(variant, part, gemm: str = "generic") -> str:
    """The non-fused kernels' key: they depend on the variant, the partition and the GEMM body, not on the
    mode or the mapping."""
    import json
    return json.dumps({"variant": variant.m, "partition": part.to_dict(), "gemm": gemm}, sort_keys=True)
