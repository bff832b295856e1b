"""Declared options: what a mapping strategy or a dispatch policy can be told.

A strategy or policy states its options once, as a frozen dataclass whose
fields carry a default, one line of help and, where the search should vary
the option, the values it tries. Everything else reads that declaration:
the CLI generates its flags and accepts `--opt name=value`, `megasim mappings`
prints the help, the search space takes its value lists from it, and tests
draw their examples from it. Adding an option therefore touches one file.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Callable, get_type_hints

from megasim.contract.errors import MegasimError


def option(default, help: str, search: tuple = ()):  # noqa: A002  (argparse's word for it)
    """A dataclass field with its help text and the values search tries (none: search keeps the default)."""
    return field(default=default, metadata={"help": help, "search": tuple(search)})


@dataclass(frozen=True)
class NoOptions:
    pass


@dataclass(frozen=True)
class OptionInfo:
    name: str
    type: type
    default: object
    help: str
    search: tuple


def declared(options: type) -> tuple[OptionInfo, ...]:
    """The options of a declaration, in field order."""
    hints = get_type_hints(options)
    return tuple(OptionInfo(f.name, hints.get(f.name, object), None if f.default is MISSING else f.default,
                            f.metadata.get("help", ""), f.metadata.get("search", ()))
                 for f in fields(options))


def search_values(options: type, **subsets) -> dict[str, tuple]:
    """name -> values the search tries, for the options that declare any.

    `subsets` narrow some lists for a study that measures part of the space
    (a hardware sweep); a value the declaration lacks is refused, so the
    study stays inside the space the search explores.
    """
    values = {o.name: o.search for o in declared(options) if o.search}
    for name, subset in subsets.items():
        outside = [v for v in subset if v not in values.get(name, ())]
        if outside:
            raise MegasimError(f"{options.__name__}.{name}: {outside} are not among its declared search values "
                               f"{values.get(name, ())}")
        values[name] = tuple(subset)
    return values


def _coerce(info: OptionInfo, value, owner: str):
    if not isinstance(value, str) or info.type is str:
        return value
    try:
        return info.type(value)
    except (TypeError, ValueError):
        raise MegasimError(f"{owner}: option {info.name} wants {info.type.__name__}, got {value!r}") from None


@dataclass(frozen=True)
class Configurable:
    """A registry entry: what to call, the options dataclass it takes, and what to call it in errors."""

    build: Callable
    options: type
    label: str

    def names(self) -> list[str]:
        return [o.name for o in declared(self.options)]

    def make_options(self, params: dict):
        """The options instance; text values (from the CLI) are converted to the declared types."""
        infos = {o.name: o for o in declared(self.options)}
        unknown = sorted(set(params) - set(infos))
        if unknown:
            raise MegasimError(f"unknown option(s) {', '.join(unknown)} for {self.label}; "
                               f"it takes {', '.join(infos) or 'none'}")
        return self.options(**{k: _coerce(infos[k], v, self.label) for k, v in params.items()})
