"""``Run``: what ``invoke`` returns, the state reached and how the run got there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic

from typing_extensions import TypeVar

from corral.cost import Cost
from corral.runtime.events import Interrupt, TraceRecord
from corral.runtime.run_state import RunState

__all__ = ["Run", "run_of"]

RunStateT = TypeVar("RunStateT", default=Any)


class Run(Generic[RunStateT]):
    """The outcome of ``invoke``: the state reached and how the run got there.

    Generic in the graph's state schema, so ``run.state["k"]`` has the type of key ``k``.
    The state is a plain ``dict`` at run time: a key that neither the input nor a node wrote
    (and that has no reducer) is absent, whatever the schema says.
    """

    __slots__ = (
        "_raw_trace",
        "_trace",
        "checkpoint_id",
        "guards",
        "interrupts",
        "spent",
        "state",
        "status",
        "steps",
        "supersteps",
        "thread_id",
    )

    def __init__(
        self,
        state: RunStateT,
        *,
        steps: int = 0,
        supersteps: int = 0,
        status: str = "done",
        interrupts: Sequence[Interrupt] = (),
        guards: Mapping[tuple[str, str], int] | None = None,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        trace: Sequence[tuple[int, str, Mapping[str, Any] | None, float]] = (),
        spent: Cost | None = None,
    ) -> None:
        self.state = state
        """The state at the end of the run (or at the pause)."""
        self.steps = steps
        """Node runs in this run, across resumes."""
        self.supersteps = supersteps
        self.status = status
        """``"done"`` or ``"interrupted"``."""
        self.interrupts: list[Interrupt] = list(interrupts)
        """The pauses waiting for an answer (``id``, ``node``, ``value``)."""
        self.guards: dict[tuple[str, str], int] = dict(guards or {})
        """How often each guarded route was taken, keyed ``(source, target)``."""
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        """The last checkpoint written, when the graph has a checkpointer."""
        self.spent = spent or Cost()
        """What the run's nodes reported spending (``ctx.spend``), across resumes."""
        self._raw_trace = trace
        self._trace: list[TraceRecord] | None = None

    @property
    def trace(self) -> list[TraceRecord]:
        """Return the records of the last 100 node runs of this call (step, node, update, seconds).

        ``seconds`` is measured only when someone receives the run's events; else ``0.0``.
        """
        if self._trace is None:
            self._trace = [TraceRecord(*item) for item in self._raw_trace]
        return self._trace

    def __repr__(self) -> str:
        return (
            f"Run(status={self.status!r}, steps={self.steps}, supersteps={self.supersteps}, "
            f"thread_id={self.thread_id!r}, state={self.state!r})"
        )


def run_of(rs: RunState) -> Run[Any]:
    """Return what ``invoke`` returns for the run ``rs`` (ended or paused)."""
    return Run(
        rs.values,
        steps=rs.steps,
        supersteps=rs.supersteps,
        status=rs.status,
        interrupts=rs.interrupts,
        guards=rs.guards,
        thread_id=rs.thread_id,
        checkpoint_id=rs.checkpoint_id,
        trace=rs.trace,
        spent=rs.purse.spent,
    )
