"""String-keyed registries: the same name in code, on the CLI and in scenario files."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

from megasim.contract.errors import MegasimError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str):
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.what} {name!r} is registered twice")
            self._items[name] = obj
            return obj
        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise MegasimError(f"unknown {self.what} {name!r}; known: {', '.join(sorted(self._items))}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items
