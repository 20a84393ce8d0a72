"""Built-in reducers and ``Overwrite``.

A reducer is any function ``(current, update) -> merged``; ``operator.add`` works too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Overwrite", "add_messages", "append", "merge", "union"]

ValueT = TypeVar("ValueT")


@dataclass(frozen=True)
class Overwrite(Generic[ValueT]):
    """An update value that replaces the key's value, bypassing its reducer.

    >>> Overwrite([])
    Overwrite(value=[])
    """

    value: ValueT


def append(current: list[Any], update: Any) -> list[Any]:
    """Return ``current`` with ``update`` appended (a list update is extended)."""
    raise NotImplementedError


def add_messages(current: list[Any], update: Any) -> list[Any]:
    """Return ``current`` with ``update``'s messages appended, replacing any with the same id."""
    raise NotImplementedError


def merge(current: dict[Any, Any], update: dict[Any, Any]) -> dict[Any, Any]:
    """Return ``current`` updated with ``update`` (a shallow dict merge)."""
    raise NotImplementedError


def union(current: set[Any], update: Any) -> set[Any]:
    """Return the union of ``current`` and ``update``."""
    raise NotImplementedError
