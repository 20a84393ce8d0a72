"""Counting a subgraph's node runs as the top-level run's steps, while the child runs.

Every node run anywhere counts once toward the top-level run's ``max_steps``, at the moment
it starts. A child runs under a :class:`StepPool`: the top-level cap and the runs already
taken (the parent's steps, one for each plain task of the superstep, whose runs the parent's
plan has already allowed, and the child runs started so far). A child's own cap is
``min(its max_steps, its runs + what the pool has left)``, so it stops exactly where the
top-level run would have: its core raises ``StepLimitError`` before the run that would
pass the cap, and :func:`lift_error` reports it as the parent's.

In the sync driver one entry runs at a time, so each has a pool of its own. In the async
driver the entries of one superstep run concurrently and share one pool: a :class:`Relay`
listens to its child's ``NodeStart`` events, takes a step from the pool for each, and lowers
the caps of the other running children. A child plans a superstep and starts its calls
with no ``await`` in between, so no two children can plan against the same remaining step.
The relay also numbers the child's node runs as the parent's steps (``NodeStart.step``,
``NodeEnd.step``, ``run.trace``) and hands the child's events to the parent, by path.
An :class:`Entry` is one call of a subgraph task: what the child starts from, and its relay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from corral.errors import CorralError, NodeError, StepLimitError
from corral.runtime.events import Custom, Event, NodeEnd, NodeRetry, NodeStart, RouteTaken
from corral.runtime.run_state import RunState

if TYPE_CHECKING:
    from corral.cost import Purse
    from corral.runtime.child_graph import ChildGraph

__all__ = ["Entry", "Relay", "StepPool"]

Trace = list[tuple[int, str, dict[str, Any] | None, float]]


class Entry(NamedTuple):
    """One call of a subgraph task: where it stands and what it may spend."""

    state: Any
    """The parent's state, or the ``Send`` argument."""
    thread: str | None
    """The child's thread (with a checkpointer)."""
    answers: list[Any]
    """The answers given to this task's pauses: ``{child interrupt id: value}`` dicts."""
    relay: Relay
    """Numbers (and, concurrently, counts) the child's node runs as the parent's."""
    deps: Any
    whole: bool
    """Whether ``state`` is the parent's state (not a ``Send`` argument)."""


class StepPool:
    """What is left of the top-level ``max_steps`` for the subgraph entries of a superstep."""

    __slots__ = ("max_steps", "members", "superstep", "taken")

    def __init__(self, superstep: int, max_steps: int, taken: int) -> None:
        self.superstep = superstep
        self.max_steps = max_steps
        """The top-level run's cap."""
        self.taken = taken
        """Node runs counted or allowed so far, the children's started runs included."""
        self.members: list[Relay] = []
        """The relays of the children running now (async: all of the superstep's)."""

    def left(self) -> int:
        """Return how many more node runs the running children may start."""
        return self.max_steps - self.taken

    def shrink(self) -> None:
        """Lower every running child's cap to its started runs plus what is left."""
        left = self.left()
        for member in self.members:
            rs = member.rs
            if rs is not None:
                rs.max_steps = min(member.own, member.started + left)


class Relay:
    """One call of a subgraph task: its child's caps, step numbers and events."""

    __slots__ = (
        "child",
        "counted",
        "emit",
        "entry",
        "numbers",
        "offset",
        "own",
        "pool",
        "purse",
        "rs",
        "shared",
        "started",
    )

    def __init__(
        self,
        child: ChildGraph,
        pool: StepPool,
        offset: int,
        emit: Callable[[Event], None] | None,
        *,
        shared: bool,
        entry: int = 0,
        purse: Purse | None = None,
    ) -> None:
        self.child = child
        self.purse = purse
        """The parent run's spending, which the child's run shares."""
        self.entry = entry
        """The step of the subgraph node's ``NodeStart`` in the parent (``NodeStart.entry``)."""
        self.pool = pool
        self.offset = offset
        """The parent's steps when the call started: child step n is parent step offset+n
        (when the pool is not shared)."""
        self.emit = emit
        self.shared = shared
        """Whether concurrent children share the pool (then runs are counted as they start)."""
        self.numbers: dict[int, int] = {}
        """Child step -> parent step, for a shared pool (numbered as runs start)."""
        self.rs: RunState | None = None
        self.own = child.max_steps
        self.started = 0
        self.counted = 0
        """The child's runs already in the parent's steps (counted when it paused)."""

    def attach(self, rs: RunState, counted: int = 0) -> None:
        """Cap ``rs`` (the child's run of this call) and listen to it when needed.

        ``counted`` of a resumed child's runs so far are in the parent's steps already (it
        counted them when the child paused); the others (runs before a crash) are not.
        """
        self.rs = rs
        if self.purse is not None:
            rs.purse = self.purse
        self.own = min(rs.max_steps, self.child.max_steps)
        self.started = rs.steps
        self.counted = counted
        self.offset -= counted  # the parent's steps include them: number from before them
        pool = self.pool
        pool.taken += rs.steps - counted
        rs.max_steps = min(self.own, rs.steps + pool.left())
        if self.shared:
            pool.members.append(self)
            rs.listen(self.shared_event)
        elif self.emit is not None:
            rs.listen(self.event)

    def done(self, rs: RunState | None) -> None:
        """Stop counting for this call (its child ended, paused or failed)."""
        if self in self.pool.members:
            self.pool.members.remove(self)

    def number(self, step: int) -> int:
        """Return the parent's step number of the child's step ``step``."""
        if self.shared:
            return self.numbers.get(step, self.offset + step)
        return self.offset + step

    def top_steps(self, child_steps: int) -> int:
        """Return the top-level run's steps when the child stopped after ``child_steps``."""
        if self.shared:
            return self.pool.taken
        return self.pool.taken - self.started + child_steps

    def trace(self, rs: RunState) -> Trace:
        """Return the child's trace of this call, named by path, numbered as the parent's."""
        paths = self.child.paths
        path = self.child.path
        if self.shared:
            number = self.number
            return [(number(item[0]), path(item[1]), *item[2:]) for item in rs.trace]
        offset = self.offset
        return [
            (offset + item[0], paths.get(item[1]) or path(item[1]), *item[2:]) for item in rs.trace
        ]

    # ------------------------------------------------------------------ listeners

    def event(self, event: Event) -> None:
        """Hand a child's node event or route to the parent: named by path, numbered as the
        parent's step, and with the entry it comes from (``NodeStart.entry``).

        The child's checkpoints and supersteps are its own: they are not handed on.
        """
        emit = self.emit
        assert emit is not None
        path = self.child.path
        if isinstance(event, NodeStart):
            inner = event.entry
            if not inner and self.child.is_entry(event.node):  # it opens an entry of its own
                inner = (event.step,)
            emit(dataclasses.replace(event, node=path(event.node), step=self.number(event.step),
                                     entry=(self.entry, *inner)))  # fmt: skip
        elif isinstance(event, NodeEnd | NodeRetry | Custom):
            emit(dataclasses.replace(event, node=path(event.node), step=self.number(event.step)))
        elif isinstance(event, RouteTaken):
            emit(dataclasses.replace(event, source=path(event.source), target=path(event.target),
                                     entry=(self.entry, *event.entry)))  # fmt: skip

    def shared_event(self, event: Event) -> None:
        """Count a child's run as it starts (shared pool), then hand the event on."""
        if type(event) is NodeStart and not self.child.is_entry(event.node):
            pool = self.pool
            pool.taken += 1
            self.numbers[event.step] = pool.taken
            self.started = event.step
            pool.shrink()
        if self.emit is not None:
            self.event(event)


def lift_error(exc: CorralError, name: str, max_steps: int, relay: Relay) -> CorralError:
    """Return a child's error as the parent reports it: node names become paths, step
    numbers the parent's, and a cap the top-level run set is reported as the top level's.

    ``name`` is the subgraph node's name, ``max_steps`` the child graph's own cap.
    """
    if isinstance(exc, StepLimitError):
        path = f"{name}/{exc.node}"
        if exc.max_steps < max_steps:  # capped by what the top-level run had left
            steps, top_max = relay.top_steps(exc.steps), relay.pool.max_steps
            msg = (
                f"stopped after {steps} steps (max_steps={top_max}) before running "
                f"{path!r}; raise max_steps or add a guard"
            )
            return StepLimitError(msg, steps=steps, max_steps=top_max, node=path,
                                  state=exc.state)  # fmt: skip
        msg = (
            f"subgraph {name!r} stopped after {exc.steps} steps (its max_steps="
            f"{exc.max_steps}) before running {path!r}; raise the child graph's "
            "max_steps or add a guard"
        )
        return StepLimitError(msg, steps=exc.steps, max_steps=exc.max_steps, node=path,
                              state=exc.state)  # fmt: skip
    if isinstance(exc, NodeError):
        path, step = f"{name}/{exc.node}", relay.number(exc.step)
        text = str(exc).replace(f"(step {exc.step}", f"(step {step}", 1)  # the parent's number
        msg = f"in subgraph {name!r}: {text}"
        return NodeError(msg, node=path, step=step, attempts=exc.attempts)
    return exc
