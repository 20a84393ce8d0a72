"""``interrupt()``: pause a run for a person.

The runtime sets a context variable around each node run of a graph that has a
checkpointer (:data:`answers_given`). ``interrupt(payload)`` reads it: the n-th call in a
node run returns the n-th answer already given for that node run, and the first unanswered
call stops the node with :class:`UnansweredInterrupt` (a ``BaseException``, so a node's
``except Exception`` does not swallow it). On
resume the node runs again from its start, so code before ``interrupt()`` runs again.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, overload

from typing_extensions import TypeForm, TypeVar

from corral.errors import InterruptWithoutCheckpointerError

__all__ = ["Answers", "UnansweredInterrupt", "answers_given", "interrupt"]


@dataclass(slots=True)
class Answers:
    """The answers given so far to the ``interrupt()`` calls of one node run."""

    answers: list[Any]
    used: int = 0


class UnansweredInterrupt(BaseException):
    """Raised by ``interrupt()`` to stop a node run until a person answers."""

    def __init__(self, payload: Any, index: int) -> None:
        super().__init__(payload)
        self.payload = payload
        self.index = index


AnswerT = TypeVar("AnswerT")
answers_given: ContextVar[Answers | None] = ContextVar("corral_interrupt", default=None)
"""The answers of the node run in progress (``None``: a graph without a checkpointer)."""


@overload
def interrupt(payload: Any) -> Any: ...
@overload
def interrupt(payload: Any, answer_type: TypeForm[AnswerT]) -> AnswerT: ...
def interrupt(payload: Any, answer_type: Any = None) -> Any:
    """Pause the run and surface ``payload``; return the person's answer on resume.

    ``answer_type`` tells the type checker what the answer is (``interrupt(q, str)``), as
    ``compile(answer_type=str)`` makes ``invoke(Resume(5))`` a type error; it is not
    checked at run time.

    Raises:
        GraphError: called outside a node of a graph compiled with a checkpointer.
    """
    scope = answers_given.get()
    if scope is None:
        msg = (
            f"interrupt({payload!r}) needs a checkpointer to pause and resume the run; "
            "compile with g.compile(checkpointer=MemorySaver()) (or SqliteSaver(path)) "
            "and call interrupt() only inside a node"
        )
        raise InterruptWithoutCheckpointerError(msg)
    index = scope.used
    scope.used += 1
    if index < len(scope.answers):
        return scope.answers[index]
    raise UnansweredInterrupt(payload, index)
