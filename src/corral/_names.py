"""One ``str`` object per node name of a graph.

A graph's node names arrive as many equal but distinct string objects: a name built with an
f-string is a new object at each place that builds it (the node, each ``then=`` route, each
``Guard``, each ``Literal`` in an annotation). Every dict and set lookup by such a name then
compares the characters of two objects that lie far apart in memory, and on a graph of
thousands of nodes those reads miss the CPU caches: the analyser's time grew faster than the
graph. A :class:`NameTable` maps every occurrence to the first object seen with that value,
so the spec, the analyser's indexes and the engine's all hold, and look up, the same object,
and a lookup succeeds on identity.

Only exact ``str`` values are mapped: a ``str`` subclass (a ``StrEnum`` member) keeps its
type and its repr in messages, and a value that is no string at all is left for the rules to
report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar, cast

from corral.errors import GraphError
from corral.spec import END, START, Guard

__all__ = ["NameTable"]

_T = TypeVar("_T")


class NameTable:
    """The first ``str`` object seen for each node name (``START`` and ``END`` included)."""

    __slots__ = ("_first",)

    def __init__(self) -> None:
        self._first: dict[Any, Any] = {START: START, END: END}

    def name(self, value: _T) -> _T:
        """Return the table's object equal to ``value`` (``value``, when it is the first)."""
        if type(value) is str:
            return cast("_T", self._first.setdefault(value, value))
        return value

    def names(self, values: Iterable[_T]) -> tuple[_T, ...]:
        """Return ``values`` with every name replaced by the table's object."""
        first = self._first
        return tuple([first.setdefault(v, v) if type(v) is str else v for v in values])

    def guards(self, guards: Iterable[object], where: str) -> tuple[Guard, ...]:
        """Return ``guards``, each remade only when a name of it is not the table's object.

        Raises:
            GraphError: one of ``guards`` is not a ``Guard`` (``where`` says whose it is).
        """
        found = tuple(guards)
        checked: list[Guard] = []
        for guard in found:
            if not isinstance(guard, Guard):
                msg = (
                    f"{where} has guards={list(found)!r}, and {guard!r} is not a Guard; "
                    "write each one as Guard(target, max=N, otherwise=...)"
                )
                raise GraphError(msg)
            target, otherwise = self.name(guard.target), self.name(guard.otherwise)
            if target is not guard.target or otherwise is not guard.otherwise:
                guard = dataclasses.replace(guard, target=target, otherwise=otherwise)
            checked.append(guard)
        return tuple(checked)
