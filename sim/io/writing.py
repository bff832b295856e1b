"""Writing output files: checked before the work, written through links, renamed into place, all or nothing.

A command that runs for minutes should learn at its start that it cannot
write its outputs, so `check_writable` looks at a path without creating
anything: a device or FIFO is refused (megasim writes regular files only,
and renaming a JSON file over /dev/full as root would replace the device),
a path under a regular file is named as such, and a scratch file made and
removed in the folder proves it writable (a read-only file system answers
only to a real write).

`write_then_rename` writes to a hidden temporary file and renames it over
the target, so an interrupted write never leaves a truncated file. A
symlink is written through: the temporary file goes beside the link's
target and is renamed over the target, so the link stays. The new file gets
the mode an ordinary `open()` would give it (0o666 less the umask) or, over
an existing file, that file's mode. Errors name the user's path, never the
temporary one.

Inside `all_or_nothing()` the renames wait until the block ends: then every
file is renamed into place, or, if the block raised, every temporary file
and every folder made for it is removed, so a failure partway leaves nothing
of that run behind (`--trace ok.json --plot bad/x.png` leaves no ok.json).
Inside `durable()` within such a block, files are renamed as they are written:
a measurement written whole is kept whatever fails after it, so a
calibration stopped partway continues where it stopped.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from megasim.io.errors import MegasimError


@dataclass
class _Pending:
    """What one `all_or_nothing` block has written but not yet renamed, and the folders it made."""
    files: list = field(default_factory=list)  # (temporary, target, the user's path)
    folders: list = field(default_factory=list)


_PENDING: ContextVar[_Pending | None] = ContextVar("megasim_pending_writes", default=None)

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


def special_kind(mode: int) -> str | None:
    """What a non-regular, non-folder file is, in words; None for a regular file or a folder."""
    return next((name for test, name in _KINDS if test(mode)), None)


def _target(path: Path) -> Path:
    """Where writing `path` lands: through any symlinks, to the file they name (`path` itself without any)."""
    real = os.path.realpath(path)
    return path if real == os.path.abspath(path) else Path(real)


def _existing_ancestor(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(".")


def _probe(user, folder: Path) -> None:
    """Make and remove a scratch file in `folder`: the one test a read-only file system answers truly."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".megasim-probe-", dir=folder)
    except OSError as exc:
        raise MegasimError(f"{user}: cannot write in {folder}: {exc.strerror}") from None
    os.close(fd)
    os.unlink(tmp)


def _refuse_existing(user, real: Path, folder: bool) -> None:
    """An existing target of the wrong kind: a special file, a folder for a file or a file for a folder."""
    mode = os.stat(real).st_mode
    kind = special_kind(mode)
    if kind:
        raise MegasimError(f"{user}: is {kind}, not a regular file; megasim writes regular files only")
    if folder and not stat.S_ISDIR(mode):
        raise MegasimError(f"{user}: is a file, not a folder")
    if not folder and stat.S_ISDIR(mode):
        raise MegasimError(f"{user}: is a folder, not a file")
    if not folder and not os.access(real, os.W_OK):
        raise MegasimError(f"{user}: is read-only")


def _refuse_loop(user) -> None:
    """A path whose links lead round in a circle (`ln -s loop loop`): realpath and exists() both pass it
    by in silence, and pathlib's resolve() raises RuntimeError, so it is looked for first."""
    try:
        os.stat(user)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MegasimError(f"{user}: cannot write: its symlinks form a loop") from None


def _checked(user, folder: bool) -> tuple[Path, Path]:
    """(where writing `user` lands, the folder that exists on the way there), refusing the wrong kinds."""
    _refuse_loop(user)
    real = _target(Path(user))
    if real.exists():
        _refuse_existing(user, real, folder)
        return real, real if folder else real.parent
    ancestor = _existing_ancestor(real)
    if not ancestor.is_dir():
        raise MegasimError(f"{user}: {ancestor} is a file, not a folder")
    return real, ancestor


def check_writable(path, folder: bool = False) -> None:
    """Refuse, creating nothing, an output `path` (a file, or with `folder` a folder) that cannot be written."""
    _, existing = _checked(path, folder)
    _probe(path, existing)


def _umask() -> int:
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1], 8) for line in fh if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def _mode_for(real: Path) -> int:
    """An existing file's mode, else what `open(path, "w")` would give: 0o666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def make_folders(path) -> None:
    """`mkdir -p path`; inside `all_or_nothing`, the folders it made are removed again if the block fails."""
    path = Path(path)
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MegasimError(f"{path}: cannot make the folder: {exc.strerror}") from None
    pending = _PENDING.get()
    if pending is not None:
        pending.folders += missing


@contextmanager
def write_then_rename(path):
    """Yield a temporary path beside `path`'s target; on success rename it over the target (or, inside
    `all_or_nothing`, when the block ends)."""
    user = path
    real, _ = _checked(user, folder=False)
    make_folders(real.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=real.suffix, dir=real.parent)
    except OSError as exc:
        raise MegasimError(f"{user}: cannot write: {exc.strerror}") from None
    os.close(fd)
    try:
        os.chmod(tmp, _mode_for(real))
        yield Path(tmp)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise MegasimError(f"{user}: cannot write: {exc.strerror}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    pending = _PENDING.get()
    if pending is None:
        _rename(tmp, real, user)
    else:
        pending.files.append((tmp, real, user))


def _rename(tmp, real: Path, user) -> None:
    try:
        os.replace(tmp, real)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise MegasimError(f"{user}: cannot write: {exc.strerror}") from None


def _discard(pending: _Pending) -> None:
    for tmp, _, _ in pending.files:
        Path(tmp).unlink(missing_ok=True)
    for folder in sorted(pending.folders, key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass


@contextmanager
def all_or_nothing():
    """Hold back every `write_then_rename` inside the block: rename them all at its end, or, if it raises,
    remove them and the folders made for them."""
    pending = _Pending()
    token = _PENDING.set(pending)
    try:
        yield pending
    except BaseException:
        _discard(pending)
        raise
    finally:
        _PENDING.reset(token)
    for i, (tmp, real, user) in enumerate(pending.files):
        try:
            _rename(tmp, real, user)
        except MegasimError:
            _discard(_Pending(files=pending.files[i + 1:]))
            raise


@contextmanager
def durable():
    """Inside an `all_or_nothing` block, rename each file this block writes at once, and keep the folders made
    for it: for results worth keeping on their own, such as each raw measurement of a resumable calibration."""
    token = _PENDING.set(None)
    try:
        yield
    finally:
        _PENDING.reset(token)
