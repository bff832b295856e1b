"""One search at a time per output folder: an advisory lock file that names its holder.

Two searches on one study would both ask Optuna for trials and write over
each other's results, so the second is refused with the holder's pid, host
and start time. The lock is on `<folder>/.search.lock`: the kernel
drops it when its process dies, however it dies, so a lock is never stale
and holding it proves that no other live search owns the folder.
It is a POSIX record lock (`lockf`), which a forked pool worker does not
inherit, so the lock goes with the search process alone. That is
what lets the runner treat whatever an earlier run left RUNNING in the
store as abandoned. A finished search leaves the file behind (it names the
last holder, and is empty of meaning once unlocked); a refused one removes
it, so a refusal leaves nothing. Removal is safe because it happens while
the lock is held, and `acquire` checks, once locked, that the path still
names the file it locked: a process that opened the file just before it
was removed finds it gone and starts again on a new one.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from megasim.contract.errors import MegasimError

LOCK_NAME = ".search.lock"


def owner() -> dict:
    """Who is running this search: written into the lock and into trials it leaves unfinished."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


class FolderLock:
    """An exclusive, non-blocking lock on one folder; `acquire` refuses with one line if it is held."""

    def __init__(self, folder: Path, what: str):
        self.path = Path(folder) / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        for _ in range(100):
            fd = self._lock_once()
            if fd is not None:
                break
        else:
            raise MegasimError(f"{self.what}: the lock file {self.path} keeps being removed under this search")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({**owner(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode(), 0)
        self._fd = fd
        return self

    def _lock_once(self) -> int | None:
        """The locked descriptor, or None where the file was removed between opening and locking it."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise MegasimError(f"{self.what}: cannot create the lock file {self.path}: {exc.strerror}") from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read(fd)
            os.close(fd)
            raise MegasimError(f"{self.what} is in use by another megasim search ({holder}); wait for it to "
                               f"finish or choose another folder") from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(self.path))
        except OSError:
            same = False
        if not same:
            os.close(fd)
            return None
        return fd

    def release(self, remove: bool = False) -> None:
        """Unlock; with `remove`, delete the file first, while it is still held."""
        if self._fd is not None:
            if remove:
                self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, exc_type, *exc) -> bool:
        self.release(remove=exc_type is not None)
        return False


def _read(fd: int) -> str:
    """The holder as the lock file names it: "pid 123 on host, since 2026-11-23 08:50:01"."""
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {doc['pid']} on {doc['host']}, since {doc['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


@contextmanager
def locked_outputs(out: Path, storage_file: Path | None = None, storage: str | None = None):
    """Create `out` (and the folder of the storage's file, if it has one) where missing, and hold their locks.

    If what runs inside fails, the locks this took are removed, and the
    folders this created are removed again where they are then empty: a
    refused search leaves nothing behind.
    """
    folders = {Path(out).resolve(): f"--out {out}"}
    if storage_file is not None:
        folders.setdefault(Path(storage_file).parent.resolve(), f"--storage {storage}")
    made: list[Path] = []
    try:
        with ExitStack() as stack:
            for folder, what in folders.items():
                made += _make(folder, what)
                stack.enter_context(FolderLock(folder, what))
            yield
    except BaseException:
        for folder in sorted(made, key=lambda p: len(p.parts), reverse=True):
            _remove_if_bare(folder)
        raise


def _make(folder: Path, what: str) -> list[Path]:
    """mkdir -p, returning the folders it created (outermost first)."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        for p in reversed(missing):
            _remove_if_bare(p)
        why = "a file is in the way" if isinstance(exc, (FileExistsError, NotADirectoryError)) else exc.strerror
        raise MegasimError(f"{what}: cannot create the folder {folder}: {why}") from None
    return missing


def _remove_if_bare(folder: Path) -> None:
    try:
        if {p.name for p in folder.iterdir()} <= {LOCK_NAME}:
            (folder / LOCK_NAME).unlink(missing_ok=True)
            folder.rmdir()
    except OSError:
        pass
