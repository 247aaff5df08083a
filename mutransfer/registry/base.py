"""A registry: the named entries of one kind (optimizer families, transfer axes, roles) in the order they were
registered. Plain data, no torch.

A registry is the one mutable thing a module of this package holds: the shipped entries are in it from the start,
and a user's code (or a test) adds its own with ``register`` or, for the length of a ``with`` block, ``registered``.
"""

from __future__ import annotations

import contextlib
from typing import Generic, Iterator, Optional, Protocol, Sequence, TypeVar, overload

from ..errors import UserError, did_you_mean

__all__ = ["Named", "Registry"]


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """The entries of one ``kind`` by name, in registration order; a sequence of entries (``registry[1:]``)."""

    def __init__(self, kind: str, entries: Sequence[T]) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: T) -> T:
        """Add ``entry``; a name already registered is refused (unregister it first)."""
        if entry.name in self._entries:
            raise ValueError(f"{self.kind} '{entry.name}' is already registered")
        self._entries[entry.name] = entry
        return entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    @contextlib.contextmanager
    def registered(self, entry: T) -> Iterator[T]:
        """``entry`` registered for the length of a ``with`` block."""
        self.register(entry)
        try:
            yield entry
        finally:
            self.unregister(entry.name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def get(self, name: str) -> Optional[T]:
        return self._entries.get(name)

    def named(self, name: str, where: str = "") -> T:
        """The entry called ``name``; a ``UserError`` naming ``where`` (the key that gave it) and the choices."""
        found = self._entries.get(name)
        if found is None:
            key = f"{where}={name}" if where else f"'{name}'"
            raise UserError(f"unknown {self.kind} {key}",
                            f"{did_you_mean(name, self.names())}choose one of: {', '.join(self.names())}")
        return found

    def __contains__(self, item: object) -> bool:
        return item in self._entries or item in self._entries.values()

    def __iter__(self) -> Iterator[T]:
        return iter(tuple(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return tuple(self._entries.values())[index]

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)})"
