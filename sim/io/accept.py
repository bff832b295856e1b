"""The plain common case of a load-time check, accepted without pydantic.

`megasim.io.schema` declares what every input file may hold, and
pydantic checks it and words the errors; but importing pydantic and building
its schemas costs about 0.1 s of CPU, paid on every `megasim simulate` for a
spec and a profile that are nearly always fine. `accept` reads the same
declarations and returns what pydantic would return, only for the plainest
input: exact types (an int is an `int`, not a bool, a float or "3"), every
range marker satisfied, dicts, and lists of at most `LONGEST` items.
Anything else, bad or merely unusual (a tuple where a list is expected, a
key a dataclass does not know, a list long enough that pydantic's Rust loop
checks it faster), is REFUSED, and `schema.parse` hands it to pydantic, which
accepts it or says what is wrong. So this accepts a subset of what pydantic
accepts and never words an error; tests/sim/test_schema_accept.py holds that
over the committed files and generated values.

Each type is compiled once into a function that converts a value or raises
`_Refused`, so a list's items cost one call each: 10,000 task ids take 4 ms
(ResNet-2's mapping has 2,172), against 0.1 s to import pydantic and build its
schema; a longer list goes to pydantic's Rust loop.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Annotated, Any, Callable, Literal, Union

LONGEST = 10_000


class _RefusedType:
    def __repr__(self) -> str:
        return "REFUSED"


REFUSED = _RefusedType()


class _Refused(Exception):
    pass


def accept(kind, data):
    """`data` as pydantic would validate it as `kind`, when it is plainly valid; REFUSED otherwise."""
    try:
        return _checker(kind)(data)
    except _Refused:
        return REFUSED


def _exact(*allowed: type) -> Callable:
    def check(value):
        if type(value) not in allowed:
            raise _Refused
        return value
    return check


def _as_float(value):
    if type(value) is float:
        return value
    if type(value) is not int or abs(value) > 2**53:
        raise _Refused
    return float(value)


_PLAIN = {Any: lambda value: value, int: _exact(int), str: _exact(str), bool: _exact(bool), float: _as_float}


@lru_cache(maxsize=None)
def _checker(kind) -> Callable:
    if kind in _PLAIN:
        return _PLAIN[kind]
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Annotated:
        return _annotated(_checker(args[0]), kind.__metadata__)
    if origin is Literal:
        return _literal(args)
    if origin in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        return _optional(_checker(next(a for a in args if a is not type(None))))
    if origin is list:
        return _sequence(_checker(args[0]), (list,), list)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _sequence(_checker(args[0]), (list, tuple), tuple)
    if origin is tuple and Ellipsis not in args:
        return _fixed(tuple(_checker(a) for a in args))
    if origin is dict:
        return _mapping(_checker(args[0]), _checker(args[1]))
    if dataclasses.is_dataclass(kind) and isinstance(kind, type) and not hasattr(kind, "__post_init__"):
        return _dataclass(kind)
    return _refuse


def _refuse(value):
    raise _Refused


def _annotated(base: Callable, markers: tuple) -> Callable:
    if not all(hasattr(m, "accepts") for m in markers):
        return _refuse

    def check(value):
        value = base(value)
        if not all(m.accepts(value) for m in markers):
            raise _Refused
        return value
    return check


def _literal(allowed: tuple) -> Callable:
    def check(value):
        if not any(type(value) is type(a) and value == a for a in allowed):
            raise _Refused
        return value
    return check


def _optional(inner: Callable) -> Callable:
    return lambda value: None if value is None else inner(value)


def _sequence(item: Callable, takes: tuple, makes: type) -> Callable:
    def check(value):
        if type(value) not in takes or len(value) > LONGEST:
            raise _Refused
        return makes(map(item, value))
    return check


def _fixed(items: tuple) -> Callable:
    def check(value):
        if type(value) not in (list, tuple) or len(value) != len(items):
            raise _Refused
        return tuple(item(v) for item, v in zip(items, value))
    return check


def _mapping(key: Callable, item: Callable) -> Callable:
    def check(value):
        if type(value) is not dict or len(value) > LONGEST:
            raise _Refused
        return {key(k): item(v) for k, v in value.items()}
    return check


def _dataclass(kind: type) -> Callable:
    """A dict of the dataclass's fields -> an instance (one without `__post_init__`, whose checks pydantic would
    word); a missing field, or an unknown one where the class's `__pydantic_config__` forbids extras, is REFUSED
    (pydantic ignores other extras, and so does this)."""
    hints = typing.get_type_hints(kind, include_extras=True)
    members = [f for f in dataclasses.fields(kind) if f.init]
    required = {f.name for f in members if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    checks = {f.name: _checker(hints[f.name]) for f in members}
    forbid = getattr(kind, "__pydantic_config__", {}).get("extra") == "forbid"

    def check(value):
        if type(value) is not dict or not required <= value.keys() or (forbid and not value.keys() <= checks.keys()):
            raise _Refused
        return kind(**{k: checks[k](v) for k, v in value.items() if k in checks})
    return check
