"""Values a node or router returns (or ``invoke`` takes) to steer the run.

They are generic in their target so that mypy checks them against the route annotations:
``list[Send[Literal["work"]]]`` accepts ``Send("work", doc)`` and rejects ``Send("wrok", doc)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from typing_extensions import TypeVar

__all__ = ["Command", "Resume", "Send"]

TargetT = TypeVar("TargetT", bound=str, default=str, covariant=True)
"""Covariant, so ``Send[Literal["work"]]`` is a ``Send[Nodes]`` when ``"work"`` is in ``Nodes``."""


@dataclass(frozen=True, eq=True)
class Send(Generic[TargetT]):
    """A router result that runs ``node`` once with ``arg`` as its input (map-reduce).

    >>> Send("work", {"doc": "a.txt"})
    Send(node='work', arg={'doc': 'a.txt'})
    """

    node: TargetT
    arg: Any


@dataclass(frozen=True, eq=True)
class Command(Generic[TargetT]):
    """A node result that updates the state and chooses the next node(s) in one step.

    >>> Command(update={"score": 1}, goto="critique")
    Command(update={'score': 1}, goto='critique', resume=None)
    """

    update: Mapping[str, Any] | None = None
    goto: TargetT | Sequence[TargetT | Send[TargetT]] | Send[TargetT] | None = None
    resume: Any = None

    def __init__(
        self,
        *,
        update: Mapping[str, Any] | None = None,
        goto: TargetT | Sequence[TargetT | Send[TargetT]] | Send[TargetT] | None = None,
        resume: Any = None,
    ) -> None:
        object.__setattr__(self, "update", update)
        object.__setattr__(self, "goto", goto)
        object.__setattr__(self, "resume", resume)


@dataclass(frozen=True)
class Resume:
    """Input to ``invoke`` that answers pending ``interrupt()`` calls.

    ``value`` answers the single pending interrupt, or is a dict ``{interrupt_id: value}``
    when several are pending.

    >>> Resume("approved")
    Resume(value='approved')
    """

    value: Any
