"""What a node or a run may spend: :class:`Cost` (an amount), :class:`Budget` (a limit) and
:class:`Purse` (what one run has spent, held to the declared costs and the budget).

Both have the fields ``calls``, ``tokens`` and ``usd``. Money is kept exactly, as a
``Decimal``; a float is converted through its shortest text (``0.1`` is ``Decimal("0.1")``),
so ``3 * Cost(usd=0.1)`` fits ``Budget(usd=0.3)``.

>>> 3 * Cost(usd=0.1) == Cost(usd="0.3")
True
>>> str(Cost(calls=2, tokens=12_000, usd=0.06))
'2 calls, 12,000 tokens, $0.06'
>>> Budget.parse("usd=0.5,tokens=100000")
Budget(calls=None, tokens=100000, usd=Decimal('0.5'))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from decimal import Decimal, InvalidOperation
from typing import Any, Final, TypeAlias, TypeVar

from corral.errors import BudgetError, CostExceededError, GraphError

__all__ = ["FIELDS", "Budget", "Cost", "Money", "Purse", "require"]

FIELDS = ("calls", "tokens", "usd")

Money: TypeAlias = Decimal | float | int | str
"""Dollars as given: kept as an exact ``Decimal`` (a float through its shortest text)."""


def _amount(name: str, value: object, owner: str) -> int | Decimal:
    """Return ``value`` as a field's amount: a whole number, or exact dollars for ``usd``."""
    if not isinstance(value, bool):
        if name == "usd" and isinstance(value, (Decimal, int, float, str)):
            try:
                money = Decimal(repr(value) if isinstance(value, float) else value)
            except InvalidOperation:
                money = Decimal("NaN")
            if money.is_finite() and money >= 0:
                return money
        elif name != "usd" and isinstance(value, int) and value >= 0:
            return value
    kind = "an amount of dollars (a Decimal, float or str)" if name == "usd" else "a whole number"
    msg = f"{owner}({name}={value!r}): {name} must be {kind}, 0 or more"
    raise GraphError(msg)


@dataclass(frozen=True, slots=True, init=False)
class Cost:
    """An amount spent or declared: model calls, tokens and dollars (a field left out is 0)."""

    calls: int
    tokens: int
    usd: Decimal

    def __init__(self, calls: int = 0, tokens: int = 0, usd: Money = 0) -> None:
        for name, value in zip(FIELDS, (calls, tokens, usd), strict=True):
            object.__setattr__(self, name, _amount(name, value, "Cost"))

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.calls + other.calls, self.tokens + other.tokens, self.usd + other.usd)

    def __mul__(self, times: int) -> Cost:
        return Cost(self.calls * times, self.tokens * times, self.usd * times)

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in FIELDS)

    __rmul__ = __mul__

    def over(self, limit: Cost | Budget | None) -> list[str]:
        """Return the fields in which this amount is more than ``limit`` (a field of a
        budget left as ``None`` limits nothing; no limit at all is a limit of nothing)."""
        most = {name: getattr(limit, name, 0) for name in FIELDS}
        return [
            name for name in FIELDS if most[name] is not None and getattr(self, name) > most[name]
        ]

    def to_json(self) -> dict[str, Any]:
        """Return the cost as JSON values (dollars as a string, so they stay exact)."""
        return {"calls": self.calls, "tokens": self.tokens, "usd": str(self.usd)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> Cost:
        """Return the cost :meth:`to_json` wrote (``None``: nothing spent)."""
        return cls(**dict(value)) if value else cls()

    def __str__(self) -> str:
        return _text(self) or "nothing"


NOTHING: Final = Cost()
"""Zero spent (a ``Cost`` is frozen, so one serves everywhere)."""


@dataclass(frozen=True, slots=True, init=False)
class Budget:
    """The most a run may spend: a field left as ``None`` is not limited.

    Set on the graph (``Graph(State, budget=Budget(usd=0.5))``) or for one call
    (``invoke(..., budget=...)``, ``corral run --budget usd=0.5``).
    """

    calls: int | None
    tokens: int | None
    usd: Decimal | None

    def __init__(
        self, calls: int | None = None, tokens: int | None = None, usd: Money | None = None
    ) -> None:
        for name, value in zip(FIELDS, (calls, tokens, usd), strict=True):
            object.__setattr__(
                self, name, None if value is None else _amount(name, value, "Budget")
            )

    @classmethod
    def parse(cls, text: str) -> Budget:
        """Return the budget written ``usd=0.5,tokens=100000`` (as ``corral run --budget``)."""
        values: dict[str, Any] = {}
        for part in text.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or name not in FIELDS:
                msg = f"budget {text!r}: write fields as usd=0.5,tokens=100000,calls=20"
                raise GraphError(msg)
            values[name] = value.strip() if name == "usd" else _whole(value, text)
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """Return the budget as JSON values (``None``: not limited; dollars as a string)."""
        usd = None if self.usd is None else str(self.usd)
        return {"calls": self.calls, "tokens": self.tokens, "usd": usd}

    def __str__(self) -> str:
        return _text(self) or "no limit"


_Amount = TypeVar("_Amount", "Cost", "Budget")


def require(value: object, kind: type[_Amount], name: str) -> _Amount | None:
    """Return ``value``; raise ``GraphError`` unless it is a ``kind`` or ``None`` (``name=``
    took it)."""
    if value is not None and not isinstance(value, kind):
        msg = f"{name}={value!r} is not a {kind.__name__}; pass {kind.__name__}(usd=0.5, ...)"
        raise GraphError(msg)
    return value


def _whole(value: str, text: str) -> int:
    try:
        return int(value.strip().replace("_", ""))
    except ValueError:
        msg = f"budget {text!r}: {value.strip()!r} is not a whole number"
        raise GraphError(msg) from None


def _text(amount: Cost | Budget) -> str:
    parts = []
    for spec in fields(amount):
        value = getattr(amount, spec.name)
        if value is None or (not value and isinstance(amount, Cost)):
            continue
        if spec.name == "usd":
            parts.append(f"${value.normalize():f}")
        else:
            parts.append(f"{value:,} {spec.name[:-1] if value == 1 else spec.name}")
    return ", ".join(parts)


class Purse:
    """What a run has spent (``run.spent``) and may spend: shared by its subgraphs' runs."""

    __slots__ = ("budget", "checked", "runs", "spent")

    def __init__(self, budget: Budget | None = None, checked: frozenset[str] = frozenset()) -> None:
        self.spent = NOTHING
        self.budget = budget
        self.checked = checked
        """The fields in which a node run's spending is held to its declared cost: those the
        graph declares (in a node's cost or its budget); a graph that declares none only
        records what it spends."""
        self.runs: dict[tuple[str, int], Cost] = {}
        """What each node run that spent has spent, by ``(node, step)``, until it ends (kept
        only for a run whose events someone receives: its ``NodeEnd`` says it)."""

    def add(self, node: str, amount: Cost, run_total: Cost, limit: Cost | None) -> None:
        """Add ``amount`` spent by ``node``, whose run has spent ``run_total`` so far."""
        self.spent += amount
        if not self.checked:
            return
        over = [name for name in run_total.over(limit) if name in self.checked]
        if not over:
            return
        declared = f"its declared cost {limit}" if limit is not None else "no declared cost"
        name = node.rpartition("/")[2]  # in its own graph (``node`` is a path in a subgraph)
        msg = (
            f"node {node!r} spent {run_total} in one run, more than {declared} "
            f"({', '.join(over)}); the graph's cost ceiling relies on it: declare what one "
            f"attempt can spend with @g.node({name!r}, cost=Cost(...)), or spend less"
        )
        raise CostExceededError(msg, node=node, declared=limit, spent=run_total)

    def refuse(self, node: str, cost: Cost | None, planned: Cost, state: Any) -> BudgetError | None:
        """Return the error of starting ``node`` now, or ``None`` when the budget allows
        what the run has spent, ``planned`` (its siblings in this superstep) and ``cost``."""
        budget = self.budget
        over = (self.spent + planned + (cost or NOTHING)).over(budget) if budget else None
        if not over or budget is None:
            return None
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
