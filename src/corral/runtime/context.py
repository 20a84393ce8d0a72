"""``Context``: the optional second parameter of a node or router."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic

from typing_extensions import TypeVar

from corral.cost import Cost, Money, Purse
from corral.runtime.events import Custom, Event

__all__ = ["Context"]

DepsT = TypeVar("DepsT", default=Any)


class Context(Generic[DepsT]):
    """What a node can see of its run: ``deps``, ``step``, ``thread_id``, run and guard counts.

    A node or router that takes a second parameter gets one; ``deps`` is whatever was passed
    as ``invoke(..., deps=...)`` (tool clients, fakes in tests). Annotate it as
    ``ctx: Context[MyDeps]`` to have mypy check its use.
    """

    __slots__ = (
        "_emit",
        "_guards",
        "_limit",
        "_path",
        "_purse",
        "_runs",
        "_spent",
        "deps",
        "node",
        "step",
        "thread_id",
    )

    def __init__(
        self,
        *,
        deps: DepsT,
        node: str,
        step: int,
        thread_id: str | None,
        runs: Mapping[str, int],
        guards: Mapping[tuple[str, str], int],
        emit: Callable[[Event], None] | None = None,
        purse: Purse | None = None,
        limit: Cost | None = None,
        path: str = "",
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
        self._emit = emit
        self._purse = purse
        self._limit = limit
        self._path = path or node
        """The node's path from the top-level graph, which its events name."""
        self._spent = Cost()

    def emit(self, value: Any) -> None:
        """Send ``value`` as a custom event (a token, a progress note) while the node runs.

        ``stream(mode="custom")`` yields it as ``(node, value)``; ``astream`` and
        ``on_event`` get it at once, while the node is still running. With no one
        listening it costs nothing.
        """
        if self._emit is not None:
            self._emit(Custom(self._path, value, self.step))

    def spend(self, calls: int = 0, tokens: int = 0, usd: Money = 0) -> None:
        """Record what this node run spent (a model call's usage) in the run's ``spent``.

        Raises:
            CostExceededError: this node run has now spent more than its declared ``cost``
                (times its attempts), when the graph declares a budget or any cost; the
                graph's cost ceiling relies on every node keeping its declaration.
        """
        amount = Cost(calls, tokens, usd)
        self._spent += amount
        if self._purse is not None:
            if self._emit is not None:  # someone receives the run's NodeEnd, which says it
                self._purse.runs[self.node, self.step] = self._spent
            self._purse.add(self._path, amount, self._spent, self._limit)

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
