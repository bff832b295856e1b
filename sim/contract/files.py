"""File helpers every layer uses: TOML and JSON reading with one-line errors, and write-then-rename.

Files are read as bytes and decoded here, so a file that is not UTF-8 is one error naming the
file and the offset of the first bad byte, never a UnicodeDecodeError from deep in a parser.

Write-then-rename means an interrupted or failed write leaves nothing half-written; it lives in
`megasim.contract.writing` with the checks every output gets before a command starts.
"""
from __future__ import annotations

import json
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from megasim.contract.errors import MegasimError
from megasim.contract.writing import write_then_rename  # noqa: F401  (re-exported: every writer imports it here)


def read_text(path) -> str:
    """A file's text: read as bytes, decoded as UTF-8 (a BOM is allowed); anything else is one MegasimError."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise MegasimError(f"{path}: cannot read: {exc.strerror}") from None
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
    except json.JSONDecodeError as exc:
        raise MegasimError(f"{path}: malformed JSON: {exc}") from None
    except RecursionError:
        raise MegasimError(f"{path}: malformed JSON: nested too deeply") from None
