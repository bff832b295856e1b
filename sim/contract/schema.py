"""Load-time validation: the value types every input file is checked against, and one-line errors.

Files are the edge where a typo, a hand edit or random bytes enter the program;
inside it, the dataclasses (`GPUSpec`, `Layer`, `Partition`) trust their fields.
pydantic sits at that edge: a type here is a Python type with its range
attached (`int_in(1, 4096)`: a strict int with its bounds), so the same line
documents a field and checks it, and pydantic reports the path to the first
bad value (`model.compute_efficiency.gemm`). `parse` turns that report into
the one line the CLI prints, naming the file, the field and the value.

Integers and floats are strict: "2048" is not a thread count, 4.0 is not a
Winograd variant, true is not 1. Floats must be finite. An int is accepted
where a float is expected, as TOML and JSON writers drop the ".0".
"""
from __future__ import annotations

from typing import Annotated, Any, Iterable

from pydantic import AfterValidator, Field, Strict, TypeAdapter, ValidationError

from megasim.contract.errors import MegasimError
from megasim.contract.problem import INT32_LIMIT

INT64_LIMIT = 2**63


def int_in(lo: int, hi: int):
    """An integer in [lo, hi] (bools and numeric strings refused)."""
    return Annotated[int, Strict(), Field(ge=lo, le=hi)]


def float_in(lo: float, hi: float, *, above: bool = False):
    """A finite number in [lo, hi], or (lo, hi] when `above`; ints are accepted."""
    bound = {"gt": lo} if above else {"ge": lo}
    return Annotated[float, Strict(), Field(allow_inf_nan=False, le=hi, **bound)]


def one_of(values: Iterable):
    """An integer among `values` (the Winograd variants, say): strict, so "4" and 4.0 are refused."""
    allowed = tuple(values)

    def check(v):
        if v not in allowed:
            raise ValueError(f"must be one of {', '.join(map(str, allowed))}")
        return v
    return Annotated[int, Strict(), AfterValidator(check)]


Dimension = Annotated[int, Strict(), Field(gt=0, lt=INT32_LIMIT)]
Int64 = Annotated[int, Strict(), Field(ge=-INT64_LIMIT, lt=INT64_LIMIT)]
Text = Annotated[str, Strict()]


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


def message(exc: ValidationError, origin: str, prefix: tuple = ()) -> str:
    """One line for a pydantic report: the file, the first bad field, what was wrong, the value."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = _where(prefix + tuple(first["loc"]))
    kind, ctx = first["type"], first.get("ctx", {})
    if kind == "missing":
        text = f"{origin}: {where} is missing"
    elif kind == "extra_forbidden":
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


def adapter(kind) -> TypeAdapter:
    """A cached TypeAdapter: building one costs milliseconds, validating with it microseconds."""
    if isinstance(kind, TypeAdapter):
        return kind
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def parse(kind, data, origin: str, prefix: tuple = ()):
    """`data` validated as `kind` (a dataclass, a pydantic model or a TypeAdapter), or one MegasimError naming `origin`."""
    try:
        return adapter(kind).validate_python(data)
    except ValidationError as exc:
        raise MegasimError(message(exc, origin, prefix)) from None
