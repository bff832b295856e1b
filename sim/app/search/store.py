"""Where a search's trials live: an in-memory Optuna study while it runs, copied to the durable storage.

Optuna's storages write on every call: a trial's ask, each suggested
parameter, each user attribute and its tell are about 21 writes, and with
the RDB storage each is a SQLite commit and some 30 ms of SQLAlchemy CPU
per trial, more than the loop itself. So the loop talks to an in-memory
study (`live`), loaded at start from the durable one, and a writer thread
copies each finished trial there whole: one `add_trial`, off the main
thread. Trials are copied in trial-number order, so the durable study
numbers them as the live one did and a resumed run's table keeps its trial
numbers; study attributes are written last-value-wins, batched with
whatever trials are waiting.

The durable storage (`--storage`) is an Optuna journal file (`PATH.journal`
or `PATH.log`: one appended JSON line per trial, about 1 ms of CPU; the
default, `OUT/study.journal`) or any Optuna RDB URL (`sqlite:///PATH`,
`postgresql://...`; an `OUT/study.db` left by an earlier megasim is
resumed). A journal whose last line was cut short by a crash is trimmed
back to its last whole line; that is safe because the caller holds the
folder lock.

Nothing unfinished is ever written as RUNNING. A run that stops (Ctrl-C)
tells its in-flight trials FAIL with `interrupted` (and the pid and host
that ran them) and writes them, so the store and the summary agree. A run
that is killed loses at most the finished trials its writer had not yet
reached. RUNNING trials found at start came from another program or an
older megasim; the caller holds the folder lock, so no live search owns
them, and they are marked FAIL (abandoned) before the copy.
"""
from __future__ import annotations

import os
import queue
import threading
from pathlib import Path

from megasim.contract.errors import MegasimError

JOURNAL_SUFFIXES = (".journal", ".log")


def storage_errors() -> tuple:
    """The exception types a storage URL or file can raise through Optuna (a journal of the wrong JSON
    raises plain KeyError or TypeError while it is replayed)."""
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import SQLAlchemyError
    return (SQLAlchemyError, StorageInternalError, ImportError, ValueError, RuntimeError, OSError, KeyError,
            TypeError)


def reason(exc: BaseException) -> str:
    """One line: the database driver's own words where SQLAlchemy wraps them."""
    text = str(getattr(exc, "orig", None) or exc)
    return (text.splitlines() or [type(exc).__name__])[0]


def durable_url(url: str | None) -> str | None:
    """`url`, checked, or None where it names no storage that outlives the run (SQLite in memory: each
    connection, the writer thread's included, would see a database of its own)."""
    if not url or url in ("sqlite://", "sqlite:///") or url.startswith("sqlite:///:memory:"):
        return None
    if "://" not in url and not url.endswith(JOURNAL_SUFFIXES):
        raise MegasimError(f"--storage {url!r}: expected an Optuna RDB URL (sqlite:///PATH, postgresql://...) "
                           f"or a journal file PATH{' or PATH'.join(JOURNAL_SUFFIXES)}")
    return url


def storage_file(url: str | None) -> Path | None:
    """The local file a storage keeps its data in (a journal, or a SQLite database), if any."""
    url = durable_url(url)
    if url is None:
        return None
    if "://" not in url:
        return Path(url)
    return Path(url[len("sqlite:///"):].split("?")[0]) if url.startswith("sqlite:///") else None


def default_storage(out: Path) -> str:
    """OUT/study.journal, or the OUT/study.db an earlier megasim left there (so it resumes)."""
    journal, db = out / "study.journal", out / "study.db"
    return f"sqlite:///{db}" if db.exists() and not journal.exists() else str(journal)


def _journal(path: str):
    from optuna.storages.journal import JournalFileBackend, JournalStorage
    _check_journal(Path(path))
    return JournalStorage(JournalFileBackend(path))


def _check_journal(path: Path) -> None:
    """Refuse a file that is not an Optuna journal; drop a last line cut short by a crash (where whole
    journal lines precede it), which the next append would otherwise be glued to."""
    if not path.exists() or path.is_dir() or path.stat().st_size == 0:
        return
    import json
    with open(path, "rb+") as fh:
        first = fh.readline()
        try:
            ok = first.endswith(b"\n") and "op_code" in json.loads(first)
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise ValueError("not an Optuna journal file (its first line is not a journal entry)")
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            fh.seek(0)
            fh.truncate(fh.read().rfind(b"\n") + 1)


def open_durable(url: str, name: str):
    """The durable study `name` at `url`, created if new; one-line MegasimError if the storage is unusable."""
    import optuna
    from optuna.trial import TrialState
    try:
        storage = _journal(url) if "://" not in url else url
        study = optuna.create_study(study_name=name, storage=storage, direction="minimize", load_if_exists=True)
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)
        study.get_trials(deepcopy=False)  # reads every trial now, so a damaged table fails here
    except storage_errors() as exc:
        raise MegasimError(f"storage {url}: {reason(exc)}") from None
    return study


def live_copy(durable, name: str, sampler):
    """An in-memory study holding `durable`'s trials (same numbers) and study attributes."""
    import optuna
    live = optuna.create_study(study_name=name, storage=optuna.storages.InMemoryStorage(), sampler=sampler,
                               direction="minimize")
    if durable is not None:
        live.add_trials(durable.get_trials(deepcopy=False))
        for key, value in durable.user_attrs.items():
            live.set_user_attr(key, value)
    return live


class Writer:
    """Copies finished trials (in number order) and study attributes to the durable study, on a thread.

    `trial` and `attr` are called from the loop's thread and never block; a
    storage failure is kept and raised by `check` or `close` as one line.
    """

    def __init__(self, durable, url: str, first_number: int):
        self.durable, self.url = durable, url
        self._next = first_number
        self._held: dict = {}
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="megasim-search-writer", daemon=True)
        self._thread.start()

    def trial(self, frozen) -> None:
        """Queue a finished trial; it is written once every lower-numbered trial has been."""
        self._held[frozen.number] = frozen
        while self._next in self._held:
            self._q.put(("trial", self._held.pop(self._next)))
            self._next += 1

    def attr(self, key: str, value) -> None:
        self._q.put(("attr", key, value))

    def check(self) -> None:
        if self.error:
            raise MegasimError(f"storage {self.url}: {self.error}")

    def close(self) -> None:
        """Write what is queued, then whatever is held back (in order), and stop."""
        for number in sorted(self._held):
            self._q.put(("trial", self._held.pop(number)))
        self._q.put(None)
        self._thread.join()
        self.check()

    def _run(self) -> None:
        stop = False
        while not stop:
            batch = [self._q.get()]
            while True:
                try:
                    batch.append(self._q.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            self._write([item for item in batch if item is not None])

    def _write(self, batch: list) -> None:
        if self.error:
            return
        attrs = {item[1]: item[2] for item in batch if item[0] == "attr"}
        try:
            for item in batch:
                if item[0] == "trial":
                    self.durable.add_trial(item[1])
            for key, value in attrs.items():
                self.durable.set_user_attr(key, value)
        except storage_errors() as exc:
            self.error = reason(exc)
