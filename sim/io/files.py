"""Reading input files: TOML, JSON and JSON lines, with one-line errors.

Files are read as bytes and decoded here, so a file that is not UTF-8 is one error naming the
file and the offset of the first bad byte, never a UnicodeDecodeError from deep in a parser.
Only regular files are read: a FIFO would wait for a writer forever, a device may never end, and a
folder is not a file, so each is refused by `regular_file` before the first byte is read.

Writing is `megasim.io.writing`'s: checked before the work, written then renamed, so an interrupted or
failed write leaves nothing half-written.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from megasim.io.errors import MegasimError
from megasim.io.writing import special_kind


def _refuse_unless_regular(who, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise MegasimError(f"{who}: is a folder, not a file")
    if not stat.S_ISREG(mode):
        kind = special_kind(mode) or "an unknown kind of file"
        raise MegasimError(f"{who}: is {kind}, not a regular file; megasim reads regular files only")


def regular_file(path, who=None) -> Path:
    """`path`, if it names a regular file (through any links); one MegasimError otherwise, for readers that
    open the file themselves (NumPy, Optuna). A missing file is refused too, in the words of the OS. `who`
    (the path by default; a flag and the path, say) leads the message."""
    who = path if who is None else who
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise MegasimError(f"{who}: cannot read: {exc.strerror}") from None
    _refuse_unless_regular(who, mode)
    return Path(path)


def existing_file(path, who=None, missing: str = "no such file") -> Path:
    """`path`, a regular file a command was given: "`who`: `missing`" where nothing is there, and anything else
    (a FIFO, a device, a folder) refused as `regular_file` refuses it, not called missing."""
    if not os.path.lexists(path):
        raise MegasimError(f"{path if who is None else who}: {missing}")
    return regular_file(path, who)


def read_bytes(path) -> bytes:
    """A regular file's bytes. Checked before opening (opening a device can itself act) and again on the
    open file, which is opened without blocking, so a file swapped for a FIFO in between cannot hang it."""
    regular_file(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise MegasimError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "rb") as fh:
            _refuse_unless_regular(path, os.fstat(fh.fileno()).st_mode)
            return fh.read()
    except OSError as exc:
        raise MegasimError(f"{path}: cannot read: {exc.strerror}") from None


def read_text(path) -> str:
    """A file's text: read as bytes, decoded as UTF-8 (a BOM is allowed); anything else is one MegasimError."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MegasimError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def read_toml(path: Path) -> dict:
    """A TOML file as a dict; a bad or unreadable file is one MegasimError naming it."""
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MegasimError(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise MegasimError(f"{path}: malformed TOML: nested too deeply") from None


def read_json(path):
    """A JSON file's contents; a bad or unreadable file is one MegasimError naming it."""
    text = read_text(path)
    try:
        return json.loads(text)
    except ValueError as exc:  # a JSONDecodeError, or an integer past Python's 4300-digit limit
        raise MegasimError(f"{path}: malformed JSON: {exc}") from None
    except RecursionError:
        raise MegasimError(f"{path}: malformed JSON: nested too deeply") from None


def read_json_lines(path, hint: str = "") -> list[tuple[int, object]]:
    """(line number, value) of every non-blank line of a JSON-lines file. An empty file, or a line that is not
    JSON, is one MegasimError naming the file and the line; `hint` follows it (what to do about such a line)."""
    found = []
    for i, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append((i, json.loads(line)))
        except ValueError as exc:
            raise MegasimError(f"{path}: line {i}: not JSON ({exc}){hint}") from None
        except RecursionError:
            raise MegasimError(f"{path}: line {i}: not JSON (nested too deeply)") from None
    if not found:
        raise MegasimError(f"{path}: empty; it should hold one JSON object a line")
    return found
