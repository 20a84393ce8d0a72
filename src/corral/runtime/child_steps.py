"""Counting a subgraph's node runs as the top-level run's steps, while the child runs.

Every node run anywhere counts once toward the top-level run's ``max_steps``, at the moment
its superstep is planned, and has one step number across the whole run (``ctx.step``,
``NodeStart.step``, ``run.trace``). The entries of a superstep share one :class:`StepPool`:
the top-level cap and the runs already taken (the parent's steps, one for each plain task
of the superstep that the plan allowed, and the child runs planned so far; a task a cap
refused never starts and takes none). A child's core plans each of its node runs against
that pool and takes its number from it (:meth:`StepPool.take`); its own ``max_steps`` is
checked first (:func:`~corral.runtime.superstep.cap_error`). A run that ``interrupt()``
paused keeps the number it took: it holds its step until it completes. So a child stops
exactly where the top-level run would have, with the top level's message. In the async
driver the entries of a superstep run concurrently; a child plans a superstep and starts
its calls with no ``await`` in between, so no two children can plan against the same
remaining step. A grandchild's runs take their numbers from the same pool.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StepPool"]


@dataclass(slots=True, eq=False)
class StepPool:
    """What is left of the top-level ``max_steps`` for the subgraph entries of a superstep."""

    max_steps: int
    """The top-level run's cap."""
    taken: int
    """Node runs counted or planned so far, the children's included: the number of the last."""

    def take(self) -> int:
        """Count one more node run of a child; return its step number."""
        self.taken += 1
        return self.taken
