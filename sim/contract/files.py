"""File helpers every layer uses: TOML and JSON reading with one-line errors, and write-then-rename.

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


def read_toml(path: Path) -> dict:
    """A TOML file as a dict; a bad or unreadable file is one MegasimError naming it."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise MegasimError(f"{path}: malformed TOML: {exc}") from None
    except OSError as exc:
        raise MegasimError(f"{path}: cannot read: {exc.strerror}") from None


def read_json(path) -> dict:
    """A JSON file's contents; a bad or unreadable file is one MegasimError naming it."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except OSError as exc:
        raise MegasimError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise MegasimError(f"{path}: malformed JSON: {exc}") from None
