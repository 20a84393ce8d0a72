"""``Run``: what ``invoke`` returns, the state reached and how the run got there."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic

from typing_extensions import TypeVar

from corral.cost import Cost
from corral.runtime.events import Interrupt, TraceRecord
from corral.runtime.run_state import RunState

__all__ = ["Run", "run_of"]

RunStateT = TypeVar("RunStateT", default=Any)


@dataclass(slots=True, eq=False, repr=False)
class Run(Generic[RunStateT]):
    """The outcome of ``invoke``: the state reached and how the run got there.

    Generic in the graph's state schema, so ``run.state["k"]`` has the type of key ``k``.
    The state is a plain ``dict`` at run time: a key that neither the input nor a node wrote
    (and that has no reducer) is absent, whatever the schema says.
    """

    state: RunStateT
    """The state at the end of the run (or at the pause)."""
    _: KW_ONLY
    steps: int = 0
    """Node runs in this run, across resumes."""
    supersteps: int = 0
    status: str = "done"
    """``"done"`` or ``"interrupted"``."""
    interrupts: list[Interrupt] = field(default_factory=list)
    """The pauses waiting for an answer (``id``, ``node``, ``value``)."""
    guards: dict[tuple[str, str], int] = field(default_factory=dict)
    """How often each guarded route was taken, keyed ``(source, target)``."""
    thread_id: str | None = None
    checkpoint_id: str | None = None
    """The last checkpoint written, when the graph has a checkpointer."""
    spent: Cost = field(default_factory=Cost)
    """What the run's nodes reported spending (``ctx.spend``), across resumes."""
    trace: list[TraceRecord] = field(default_factory=list)
    """The records of the last 100 node runs of this call (step, node, update, seconds).

    ``seconds`` is measured only when someone receives the run's events; else ``0.0``.
    """

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
        interrupts=list(rs.interrupts),
        guards=dict(rs.guards),
        thread_id=rs.thread_id,
        checkpoint_id=rs.checkpoint_id,
        spent=rs.purse.spent,
        trace=[TraceRecord(*item) for item in rs.trace],
    )
