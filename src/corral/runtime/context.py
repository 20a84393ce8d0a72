"""``Context``: the optional second parameter of a node or router."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic

from typing_extensions import TypeVar

from corral.cost import Budget, Cost, Money
from corral.errors import BudgetError, CostExceededError

__all__ = ["Context", "Purse"]

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
        emit: Callable[[str, int, Any], None] | None = None,
        purse: Purse | None = None,
        limit: Cost | None = None,
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
        self._spent = Cost()

    def emit(self, value: Any) -> None:
        """Send ``value`` as a custom event (a token, a progress note) while the node runs.

        ``stream(mode="custom")`` yields it as ``(node, value)``; ``astream`` and
        ``on_event`` get it at once, while the node is still running. With no one
        listening it costs nothing.
        """
        if self._emit is not None:
            self._emit(self.node, self.step, value)

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
            self._purse.add(self.node, amount, self._spent, self._limit)

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


class Purse:
    """What a run has spent (``run.spent``) and may spend: shared by its subgraphs' runs."""

    __slots__ = ("budget", "checked", "spent")

    def __init__(self, budget: Budget | None = None, checked: frozenset[str] = frozenset()) -> None:
        self.spent = Cost()
        self.budget = budget
        self.checked = checked
        """The fields in which a node run's spending is held to its declared cost: those the
        graph declares (in a node's cost or its budget); a graph that declares none only
        records what it spends."""

    def add(self, node: str, amount: Cost, run_total: Cost, limit: Cost | None) -> None:
        """Add ``amount`` spent by ``node``, whose run has spent ``run_total`` so far."""
        self.spent += amount
        if not self.checked:
            return
        over = [name for name in run_total.over(limit) if name in self.checked]
        if not over:
            return
        declared = f"its declared cost {limit}" if limit is not None else "no declared cost"
        msg = (
            f"node {node!r} spent {run_total} in one run, more than {declared} "
            f"({', '.join(over)}); the graph's cost ceiling relies on it: declare what one "
            f"attempt can spend with @g.node({node!r}, cost=Cost(...)), or spend less"
        )
        raise CostExceededError(msg, node=node, declared=limit, spent=run_total)

    def refuse(self, node: str, cost: Cost | None, planned: Cost, state: Any) -> BudgetError | None:
        """Return the error of starting ``node`` now, or ``None`` when the budget allows
        what the run has spent, ``planned`` (its siblings in this superstep) and ``cost``."""
        budget = self.budget
        may = planned if cost is None else planned + cost
        over = (self.spent + may).over(budget) if budget is not None else None
        if not over:
            return None
        assert budget is not None
        msg = (
            f"stopped before {node!r}: the run has spent {self.spent} and {node!r} may "
            f"spend {cost or 'nothing'}, which would pass the budget {budget} "
            f"({', '.join(over)}); continue with a larger one: invoke(None, "
            f"thread_id=..., budget=Budget(...)), or lower what the graph can spend (corral "
            f"cycles shows its ceiling)"
        )
        return BudgetError(
            msg, node=node, spent=self.spent, cost=cost or Cost(), budget=budget, state=state
        )
