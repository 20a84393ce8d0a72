"""Values a node or router returns (or ``invoke`` takes) to steer the run.

They are generic in their target so that mypy checks them against the route annotations:
``list[Send[Literal["work"]]]`` accepts ``Send("work", doc)`` and rejects ``Send("wrok", doc)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, Never, overload

from typing_extensions import ParamSpec, TypeVar

__all__ = ["Command", "Resume", "Send"]

TargetT = TypeVar("TargetT", bound=str, default=str, covariant=True)
"""Covariant, so ``Send[Literal["work"]]`` is a ``Send[Nodes]`` when ``"work"`` is in ``Nodes``."""
ArgT = TypeVar("ArgT")
AnswerT = TypeVar("AnswerT", default=Any)
"""What a person answers an ``interrupt()`` with (``compile(answer_type=...)``)."""
_RestT = ParamSpec("_RestT")


@dataclass(frozen=True, eq=True)
class Send(Generic[TargetT]):
    """A router result that runs ``node`` once with ``arg`` as its input (map-reduce).

    ``node`` is a node's name, or the node function itself: ``Send(execute, step)`` lets a
    type checker check ``step`` against the type ``execute`` takes (its ``input=``). The
    runtime reads the function as the name of the node it was registered as.

    >>> Send("work", {"doc": "a.txt"})
    Send(node='work', arg={'doc': 'a.txt'})
    """

    node: TargetT
    """The node to run: its name (or, until the runtime reads it, its function)."""
    arg: Any
    """What the node receives instead of the state."""

    # The function form's ``arg`` is typed ``ArgT | Callable[[Never], ArgT]`` for mypy's sake:
    # mypy infers a plain ``ArgT`` argument before the function, so a dict literal would fix
    # ``ArgT`` as ``dict[str, str]`` and then reject the node taking a ``TypedDict``. A
    # parameter whose type has a callable returning ``ArgT`` is inferred after the others (in
    # mypy's second pass), with ``ArgT`` already read from the node's first parameter; the
    # ``ParamSpec`` in ``node`` keeps the node itself in the first pass. No node input is a
    # function of ``Never``, so the extra member accepts nothing a user would send.
    @overload
    def __init__(self, node: TargetT, arg: Any) -> None: ...
    @overload
    def __init__(
        self: Send[Any],
        node: Callable[Concatenate[ArgT, _RestT], object],
        arg: ArgT | Callable[[Never], ArgT],
    ) -> None: ...
    def __init__(self, node: Any, arg: Any) -> None:
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "arg", arg)


@dataclass(frozen=True, kw_only=True)
class Command(Generic[TargetT]):
    """A node result that updates the state and chooses the next node(s) in one step.

    >>> Command(update={"score": 1}, goto="critique")
    Command(update={'score': 1}, goto='critique', resume=None)
    """

    update: Mapping[str, Any] | None = None
    goto: TargetT | Sequence[TargetT | Send[TargetT]] | Send[TargetT] | None = None
    resume: Any = None


@dataclass(frozen=True)
class Resume(Generic[AnswerT]):
    """Input to ``invoke`` that answers pending ``interrupt()`` calls.

    ``value`` answers the single pending interrupt, or is a dict ``{interrupt_id: value}``
    when several are pending.

    >>> Resume("approved")
    Resume(value='approved')
    """

    value: AnswerT | Mapping[str, AnswerT]
