"""The state a node sees and how updates are merged into it.

A node gets a :class:`StateView`: a read-only ``dict`` built from a shallow copy of the
state. Assigning or deleting a key raises ``TypeError``; a list, dict, set or other mutable
value read from it is a deep copy made on first read (and kept for that node run), so a
node that mutates what it read changes only its own copy, never the run's state, a sibling's
input or a checkpoint. Immutable values (numbers, strings, ``None``...) are handed out as
they are. When every value of the state is immutable, the node gets a :class:`FlatView`
instead, a plain read-only copy (there is nothing to copy on read).

:func:`apply_writes` merges the updates of one superstep into a *new* dict (the old state is
kept intact, which is what ``err.state`` and checkpoints rely on): a key with a reducer takes
``reducer(current, update)``, an :class:`~corral.reducers.Overwrite` replaces the value, and
any other key is replaced; two writes of a key without a reducer in one superstep are an
error, never last-writer-wins.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from corral.errors import InvalidUpdateError
from corral.reducers import Overwrite

__all__ = [
    "IMMUTABLE",
    "FlatView",
    "Reducers",
    "StateView",
    "apply_writes",
    "copy_value",
]

Reducers = Mapping[str, Callable[[Any, Any], Any] | None]

IMMUTABLE: frozenset[type] = frozenset({int, float, complex, bool, str, bytes, type(None), range})
"""Types whose values a node can be handed without a copy."""


def _read_only(what: str) -> NoReturn:
    msg = (
        f"cannot {what}: the state a node receives is read-only; return the keys you "
        "change as the node's update (e.g. return {'key': new_value})"
    )
    raise TypeError(msg)


class FlatView(dict[str, Any]):
    """A read-only copy of a state whose values are all immutable (numbers, strings...).

    It reads as a dict; only the methods that would change it differ (``view | {...}``
    is dict's own: a new plain dict, made through the view's reads).
    """

    __slots__ = ()

    def copy(self) -> dict[str, Any]:
        """Return a plain, mutable dict with private copies of mutable values."""
        return dict(self)

    def __reduce__(self) -> Any:  # pickle and copy.copy / copy.deepcopy give a plain dict
        return (dict, (self.copy(),))

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        _read_only(f"set {key!r}")

    def __delitem__(self, key: str) -> NoReturn:
        _read_only(f"delete {key!r}")

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _read_only("update the state with |=")

    def clear(self) -> NoReturn:
        _read_only("clear the state")

    def pop(self, key: str, *default: Any) -> NoReturn:
        _read_only(f"pop {key!r}")

    def popitem(self) -> NoReturn:
        _read_only("pop an item")

    def setdefault(self, key: str, default: Any = None) -> NoReturn:
        _read_only(f"set a default for {key!r}")

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _read_only("update the state")


class StateView(FlatView):
    """A read-only copy of the state, as a node or router receives it.

    >>> items = [1]
    >>> view = StateView({"n": 1, "items": items})
    >>> view["items"].append(2)
    >>> view["items"], items
    ([1, 2], [1])
    >>> view["n"] = 2
    Traceback (most recent call last):
    TypeError: cannot set 'n': the state a node receives is read-only; ...
    """

    # No __slots__: the class-level None below is the "nothing copied yet" default (an
    # unset slot would raise AttributeError instead).
    _owned: set[str] | None = None
    """The keys whose mutable values this view already copied; ``None`` until one is read."""

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) in IMMUTABLE:
            return value
        owned = self._owned
        if owned is None:
            owned = self._owned = set()
        if key in owned:
            return value
        mine = copy_value(value)
        dict.__setitem__(self, key, mine)
        owned.add(key)
        return mine

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value of ``key`` (a private copy if mutable), or ``default``."""
        if dict.__contains__(self, key):
            return self[key]
        return default

    def __iter__(self) -> Iterator[str]:
        # Overriding __iter__ makes dict(view) and {**view} go through keys() and
        # __getitem__, so they copy mutable values too.
        return dict.__iter__(self)

    def items(self) -> Any:
        """Return the items, with private copies of mutable values."""
        return [(key, self[key]) for key in dict.keys(self)]

    def values(self) -> Any:
        """Return the values, with private copies of mutable values."""
        return [self[key] for key in dict.keys(self)]

    def copy(self) -> dict[str, Any]:
        """Return a plain, mutable dict with private copies of mutable values."""
        return {key: self[key] for key in dict.keys(self)}


_MISSING: Any = object()


def copy_value(value: Any) -> Any:
    """Return a deep copy of ``value``, as ``copy.deepcopy`` would make it.

    Lists and dicts are walked with a stack of their own instead of by recursion, so a
    structure nested deeper than Python's recursion limit is copied too; a reference
    already copied is taken from ``memo``, so shared and cyclic references stay shared.
    The common shapes need no walk item by item (:func:`_flat_copy`); anything that is not
    a list or a dict goes through ``copy.deepcopy`` with the same ``memo``.

    >>> data = {"messages": [{"role": "user", "text": "hi"}], "tags": {"a"}}
    >>> copied = copy_value(data)
    >>> copied == data, copied["messages"][0] is data["messages"][0]
    (True, False)
    >>> deep = 0
    >>> for _ in range(5000):
    ...     deep = [deep]
    >>> copied = copy_value(deep)
    >>> depth = 0
    >>> while isinstance(copied, list):
    ...     copied, depth = copied[0], depth + 1
    >>> depth
    5000
    """
    kind = type(value)
    if kind in IMMUTABLE or kind is frozenset:
        return value
    if (flat := _flat_copy(value)) is not None:
        return flat
    memo: dict[int, Any] = {}
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        into, key, item = stack.pop()
        kind = type(item)
        if kind in IMMUTABLE or kind is frozenset:
            into[key] = item
            continue
        made = memo.get(id(item), _MISSING)
        if made is _MISSING:
            if (flat := _flat_copy(item)) is not None:
                made = flat
            elif kind is list:
                made = [None] * len(item)
                stack.extend((made, index, inner) for index, inner in enumerate(item))
            elif kind is dict:
                made = dict.fromkeys(item)
                stack.extend((made, name, inner) for name, inner in item.items())
            else:
                made = copy.deepcopy(item, memo)
            memo[id(item)] = made
        into[key] = made
    return root[0]


def _flat_copy(item: Any) -> Any:
    """Return a copy of a list or dict of immutable values, or of a list of plain dicts of
    immutable values (chat messages); ``None`` for anything else."""
    kind = type(item)
    if kind is dict:
        return item.copy() if _all_immutable(map(type, item.values())) else None
    if kind is not list:
        return None
    if _all_immutable(map(type, item)):
        return item.copy()
    if _DICT.issuperset(map(type, item)) and _all_immutable(
        map(type, _chain(map(dict.values, item)))
    ):
        return list(map(dict.copy, item))
    return None


_all_immutable = IMMUTABLE.issuperset
"""Return whether every type an iterable yields is immutable."""
_chain = itertools.chain.from_iterable
_DICT = frozenset({dict})


def apply_writes(
    values: dict[str, Any],
    writes: Sequence[tuple[str, Mapping[str, Any]]],
    reducers: Reducers,
    empties: Mapping[str, Any],
    superstep: int | None = None,
    prefix: str = "",
) -> dict[str, Any]:
    """Return a new state: ``values`` with ``writes`` merged in order.

    Args:
        writes: ``(node, update)`` pairs in merge order; their keys are already checked.
        reducers: the reducer of every key (``None`` for last-write keys).
        empties: the empty value a reducer starts from when its key is missing.
        superstep: when given, two writes of one key without a reducer raise (the
            superstep's number goes in the message); replaying saved writes passes ``None``.
        prefix: the path of the writers' graph (``research/`` inside a subgraph): an error
            names each writer by its path, the way every run error inside a child does.

    Raises:
        InvalidUpdateError: a parallel write without a reducer, or a reducer that failed.
    """
    new = values.copy()
    owners: dict[str, str] | None = {} if len(writes) > 1 and superstep is not None else None
    for node, update in writes:
        for key, value in update.items():
            reducer = reducers.get(key)
            if reducer is None:
                if owners is not None:
                    first = owners.get(key)
                    if first is not None:
                        first, node = prefix + first, prefix + node
                        where = f" of subgraph {prefix[:-1]!r}" if prefix else ""
                        msg = (
                            f"nodes {first!r} and {node!r} both wrote key {key!r} in "
                            f"superstep {superstep}{where} and {key!r} has no reducer; give it one "
                            f"(Annotated[..., operator.add]) or write it from one node"
                        )
                        raise InvalidUpdateError(msg, node=node, key=key, nodes=(first, node))
                    owners[key] = node
                new[key] = value.value if isinstance(value, Overwrite) else value
            elif isinstance(value, Overwrite):
                new[key] = value.value
            else:
                current = new[key] if key in new else copy.copy(empties.get(key))
                try:
                    new[key] = reducer(current, value)
                except Exception as exc:
                    name = getattr(reducer, "__name__", repr(reducer))
                    node = prefix + node
                    msg = (
                        f"reducer {name!r} of key {key!r} failed on the update from node "
                        f"{node!r} ({type(exc).__name__}: {exc}); return a value the "
                        f"reducer accepts, or wrap it in Overwrite(...) to replace the key"
                    )
                    raise InvalidUpdateError(msg, node=node, key=key) from exc
    return new
