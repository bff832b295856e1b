"""Load-time validation: the value types every input file is checked against, and one-line errors.

Files are the edge where a typo, a hand edit or random bytes enter the program;
inside it, the dataclasses (`GPUSpec`, `Layer`, `Partition`) trust their fields.
A type here is a Python type with its range attached as a small frozen marker
(`int_in(1, 4096)` is `Annotated[int, Number(int, ge=1, le=4096)]`), so the same
line documents a field and checks it, and declaring one imports nothing.

Two interpreters read these declarations. pydantic is the checker of record:
it reports the path to the first bad value (`model.compute_efficiency.gemm`),
and `parse` turns that report into the one line the CLI prints, naming the
file, the field and the value. Importing it and building its schemas costs
0.13 s of CPU, more than the rest of `megasim simulate`'s own start-up,
so `parse` first asks `megasim.io.accept`, which takes only the plain
common case (exact types, in range, short lists) and hands everything else to
pydantic; a good committed file is checked without pydantic, a bad one is
refused by pydantic with its message.

Integers and floats are strict: "2048" is not a thread count, 4.0 is not a
Winograd variant, true is not 1. Floats must be finite. An int is accepted
where a float is expected, as TOML and JSON writers drop the ".0".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Iterable

from megasim.io.accept import REFUSED, accept
from megasim.io.errors import MegasimError

INT64_LIMIT = 2**63
_BOUNDS = ("ge", "gt", "le", "lt")


@dataclass(frozen=True)
class Number:
    """A strict int (`kind` int: bools and numeric strings refused), or a finite float (ints accepted), in bounds."""
    kind: type
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def bounds(self) -> dict:
        return {k: getattr(self, k) for k in _BOUNDS if getattr(self, k) is not None}

    def accepts(self, value) -> bool:
        """For `megasim.io.accept`: `value`, already of `kind`, within the bounds."""
        if self.kind is float and not math.isfinite(value):
            return False
        return ((self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
                and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))

    def __get_pydantic_core_schema__(self, source, handler):
        from pydantic_core import core_schema
        if self.kind is int:
            return core_schema.int_schema(strict=True, **self.bounds())
        return core_schema.float_schema(strict=True, allow_inf_nan=False, **self.bounds())


@dataclass(frozen=True)
class Str:
    """A strict str (not bytes, not a number) of at least `min_length` characters."""
    min_length: int = 0

    def accepts(self, value) -> bool:
        return len(value) >= self.min_length

    def __get_pydantic_core_schema__(self, source, handler):
        from pydantic_core import core_schema
        return core_schema.str_schema(strict=True, min_length=self.min_length)


@dataclass(frozen=True)
class OneOf:
    """A strict int among `allowed` (the Winograd variants, say): "4" and 4.0 are refused."""
    allowed: tuple

    def accepts(self, value) -> bool:
        return value in self.allowed

    def check(self, value):
        if value not in self.allowed:
            raise ValueError(f"must be one of {', '.join(map(str, self.allowed))}")
        return value

    def __get_pydantic_core_schema__(self, source, handler):
        from pydantic_core import core_schema
        return core_schema.no_info_after_validator_function(self.check, core_schema.int_schema(strict=True))


@dataclass(frozen=True)
class Items:
    """A list's length bounds; `fail_fast` stops at the first bad item (one bad id is enough to refuse a million)."""
    min_length: int | None = None
    max_length: int | None = None
    fail_fast: bool = False

    def accepts(self, value) -> bool:
        return (self.min_length or 0) <= len(value) and (self.max_length is None or len(value) <= self.max_length)

    def __get_pydantic_core_schema__(self, source, handler):
        schema = handler(source)
        given = {"min_length": self.min_length, "max_length": self.max_length, "fail_fast": self.fail_fast or None}
        schema.update({k: v for k, v in given.items() if v is not None})
        return schema


def int_in(lo: int, hi: int):
    """An integer in [lo, hi] (bools and numeric strings refused)."""
    return Annotated[int, Number(int, ge=lo, le=hi)]


def float_in(lo: float, hi: float, *, above: bool = False):
    """A finite number in [lo, hi], or (lo, hi] when `above`; ints are accepted."""
    return Annotated[float, Number(float, le=hi, **({"gt": lo} if above else {"ge": lo}))]


def one_of(values: Iterable):
    """An integer among `values` (the Winograd variants, say): strict, so "4" and 4.0 are refused."""
    return Annotated[int, OneOf(tuple(values))]


Int64 = Annotated[int, Number(int, ge=-INT64_LIMIT, lt=INT64_LIMIT)]
Text = Annotated[str, Str()]


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if part == "[key]":
            out += " (the key)"
        else:
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the document"


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def message(exc, origin: str, prefix: tuple = ()) -> str:
    """One line for a pydantic report (a ValidationError): the file, the first bad field, what was wrong, the value."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = _where(prefix + tuple(first["loc"]))
    kind, ctx = first["type"], first.get("ctx", {})
    if kind == "missing":
        text = f"{origin}: {where} is missing"
    elif kind in ("extra_forbidden", "unexpected_keyword_argument"):
        text = f"{origin}: {where} is not a known field"
    elif kind in ("too_short", "too_long"):
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        text = (f"{origin}: {where} has {ctx.get('actual_length')} items; needs "
                f"{'at least' if kind == 'too_short' else 'at most'} {bound}")
    else:
        msg = first["msg"].removeprefix("Value error, ").removeprefix("Input ")
        text = f"{origin}: {where} {msg}, got {_shown(first.get('input'))}"
    more = len(errors) - 1
    return " ".join((text + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")).split())


_ADAPTERS: dict = {}


def adapter(kind):
    """pydantic's cached TypeAdapter for `kind`: building one costs milliseconds, validating with it microseconds."""
    if kind not in _ADAPTERS:
        from pydantic import TypeAdapter
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def parse(kind, data, origin: str, prefix: tuple = ()):
    """`data` validated as `kind` (a type of this module's, a dataclass), or one MegasimError naming `origin`."""
    value = accept(kind, data)
    if value is not REFUSED:
        return value
    try:
        from pydantic import ValidationError
    except ImportError:  # a declared dependency, but a bare GPU image may lack it: committed files need none
        raise MegasimError(f"{origin}: checking this file needs pydantic, which is not installed") from None
    try:
        return adapter(kind).validate_python(data)
    except ValidationError as exc:
        raise MegasimError(message(exc, origin, prefix)) from None
