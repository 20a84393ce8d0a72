"""``Context``: the optional second parameter of a node or router."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Generic

from typing_extensions import TypeVar

__all__ = ["Context"]

DepsT = TypeVar("DepsT", default=Any)


class Context(Generic[DepsT]):
    """What a node can see of its run: ``deps``, ``step``, ``thread_id``, run and guard counts.

    A node or router that takes a second parameter gets one; ``deps`` is whatever was passed
    as ``invoke(..., deps=...)`` (tool clients, fakes in tests). Annotate it as
    ``ctx: Context[MyDeps]`` to have mypy check its use.
    """

    __slots__ = ("_guards", "_runs", "deps", "node", "step", "thread_id")

    def __init__(
        self,
        *,
        deps: DepsT,
        node: str,
        step: int,
        thread_id: str | None,
        runs: Mapping[str, int],
        guards: Mapping[tuple[str, str], int],
    ) -> None:
        self.deps: DepsT = deps
        """Whatever the caller passed as ``deps=``."""
        self.node = node
        """The node running (for a router: the node whose route it chooses)."""
        self.step = step
        """The run's step number of this node run (1 for the run's first node run)."""
        self.thread_id = thread_id
        self._runs = runs
        self._guards = guards

    def runs(self, node: str) -> int:
        """Return how many times ``node`` has finished a run in this run so far."""
        return self._runs.get(node, 0)

    @property
    def guards(self) -> Mapping[tuple[str, str], int]:
        """Return the guard counts so far, keyed ``(source, target)`` (a read-only view)."""
        return MappingProxyType(self._guards)

    def guard(self, source: str, target: str) -> int:
        """Return how many times the guarded route ``source`` → ``target`` was taken."""
        return self._guards.get((source, target), 0)

    def __repr__(self) -> str:
        return f"Context(node={self.node!r}, step={self.step}, thread_id={self.thread_id!r})"
