"""Counting a subgraph's node runs as the top-level run's steps, while the child runs.

Every node run anywhere counts once toward the top-level run's ``max_steps``, at the moment
it starts. The entries of a superstep share one :class:`StepPool`: the top-level cap and
the runs already taken (the parent's steps, one for each plain task of the superstep that
the plan allowed, and the child runs started so far; a task a cap refused never starts and
takes none). The entry (:class:`~corral.runtime.child_graph.Entry`) takes a step from the
pool for each of its child's node runs: as each starts when it listens to its child
(:meth:`StepPool.take` lowers the caps of the running children to their runs plus what the
pool has left), else all at once when the child returns (with one for each of its runs
that ``interrupt()`` paused: it holds its step until it completes). So a child stops
exactly where the top-level run would have: its core raises ``StepLimitError`` before the
run that would pass the cap, and :func:`lift` reports it as the parent's. In the async
driver the entries of a superstep run concurrently; a child plans a superstep and starts
its calls with no ``await`` in between, so no two children can plan against the same
remaining step.

The entry also numbers the child's node runs as the parent's steps (``NodeStart.step``,
``NodeEnd.step``, ``run.trace``) and hands the child's events to the parent, by path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corral.errors import CorralError, NodeError, StepLimitError

__all__ = ["StepPool", "lift"]


@dataclass(slots=True, eq=False)
class StepPool:
    """What is left of the top-level ``max_steps`` for the subgraph entries of a superstep."""

    max_steps: int
    """The top-level run's cap."""
    taken: int
    """Node runs counted or allowed so far, the children's started runs included."""
    members: list[Any] = field(default_factory=list)
    """The entries of the children running now."""

    def take(self) -> int:
        """Count one more node run of a running child, lowering every running child's cap to
        its started runs plus what is left; return the run's parent step number."""
        self.taken += 1
        left = self.max_steps - self.taken
        for member in self.members:
            if member.rs is not None:
                member.rs.max_steps = min(member.child.settings.max_steps, member.started + left)
        return self.taken


def lift(exc: CorralError, entry: Any) -> CorralError:
    """Return a child's error as the parent reports it: node names become paths, step
    numbers the parent's, and a cap the top-level run set is reported as the top level's.

    ``entry``: the :class:`~corral.runtime.child_graph.Entry` the child ran in."""
    name = entry.child.name
    if isinstance(exc, StepLimitError):
        path, steps, cap = f"{name}/{exc.node}", exc.steps, exc.max_steps
        if cap < entry.child.settings.max_steps:  # capped by what the top-level run had left
            steps = entry.pool.taken - entry.started + exc.steps  # runs not counted yet too
            cap = entry.pool.max_steps
            msg = (
                f"stopped after {steps} steps (max_steps={cap}) before running "
                f"{path!r}; raise max_steps or add a guard"
            )
        else:
            msg = (
                f"subgraph {name!r} stopped after {steps} steps (its max_steps={cap}) before "
                f"running {path!r}; raise the child graph's max_steps or add a guard"
            )
        return StepLimitError(msg, steps=steps, max_steps=cap, node=path, state=exc.state)
    if isinstance(exc, NodeError):
        path, step = f"{name}/{exc.node}", entry.number(exc.step)
        text = str(exc).replace(f"(step {exc.step}", f"(step {step}", 1)  # the parent's
        msg = f"in subgraph {name!r}: {text}"
        return NodeError(msg, node=path, step=step, attempts=exc.attempts)
    return exc
