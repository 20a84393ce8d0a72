"""Built-in reducers and ``Overwrite``.

A reducer is any function ``(current, update) -> merged``; ``operator.add`` works too. The
runtime calls it once per update, in merge order, and stores what it returns. Every reducer
here returns a new value and never changes ``current`` in place, so a state a node was given
(or a saved checkpoint) is never changed behind its back.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
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


def append(current: list[Any] | None, update: Any) -> list[Any]:
    """Return ``current`` with ``update`` appended (a list or tuple update is extended).

    >>> append(["a"], "b"), append(["a"], ["b", "c"])
    (['a', 'b'], ['a', 'b', 'c'])
    """
    base = list(current) if current is not None else []
    if isinstance(update, (list, tuple)):
        base.extend(update)
    else:
        base.append(update)
    return base


def _message_id(message: Any) -> Any:
    if isinstance(message, Mapping):
        return message.get("id")
    return getattr(message, "id", None)


def add_messages(current: list[Any] | None, update: Any) -> list[Any]:
    """Return ``current`` with ``update``'s messages appended, replacing any with the same id.

    A message is a dict with an ``"id"`` key or an object with an ``id`` attribute; a message
    whose id is ``None`` (or missing) is always appended.

    >>> old = [{"id": "1", "text": "hi"}]
    >>> add_messages(old, [{"id": "1", "text": "hello"}, {"id": "2", "text": "bye"}])
    [{'id': '1', 'text': 'hello'}, {'id': '2', 'text': 'bye'}]
    """
    merged = list(current) if current is not None else []
    new = list(update) if isinstance(update, (list, tuple)) else [update]
    where = {}
    for index, message in enumerate(merged):
        ident = _message_id(message)
        if ident is not None:
            where[ident] = index
    for message in new:
        ident = _message_id(message)
        if ident is not None and ident in where:
            merged[where[ident]] = message
        else:
            if ident is not None:
                where[ident] = len(merged)
            merged.append(message)
    return merged


def merge(current: Mapping[Any, Any] | None, update: Mapping[Any, Any]) -> dict[Any, Any]:
    """Return ``current`` updated with ``update`` (a shallow dict merge).

    >>> merge({"a": 1, "b": 2}, {"b": 3})
    {'a': 1, 'b': 3}
    """
    out = dict(current) if current is not None else {}
    out.update(update)
    return out


def union(current: Iterable[Any] | None, update: Any) -> set[Any]:
    """Return the union of ``current`` and ``update`` (a single non-collection is added).

    >>> sorted(union({"a"}, ["b", "a"])), sorted(union({"a"}, "c"))
    (['a', 'b'], ['a', 'c'])
    """
    out = set(current) if current is not None else set()
    if isinstance(update, (set, frozenset, list, tuple)):
        out.update(update)
    else:
        out.add(update)
    return out


BUILT_IN: dict[str, Any] = {
    "operator.add": operator.add,
    "operator.or_": operator.or_,
    **{f"corral.reducers.{f.__name__}": f for f in (append, add_messages, merge, union)},
}
"""The reducers a checkpoint names so ``corral show`` can replay writes without the graph."""


def reducer_name(reducer: Any) -> str:
    """Return a built-in reducer's name (a key of :data:`BUILT_IN`), else its own name.

    A module ``corral`` loads from a path has a made-up name, so a custom reducer is named
    by its ``__qualname__`` alone (never one of the built-in names).

    >>> import operator
    >>> reducer_name(operator.add), reducer_name(union), reducer_name(lambda a, b: b)
    ('operator.add', 'corral.reducers.union', '<lambda>')
    """
    for name, known in BUILT_IN.items():
        if known is reducer:
            return name
    return str(getattr(reducer, "__qualname__", type(reducer).__qualname__))
