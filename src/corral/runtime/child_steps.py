"""Counting a subgraph's node runs as the top-level run's steps, while the child runs.

Every node run anywhere counts once toward the top-level run's ``max_steps``, at the moment
it starts. A child runs under a :class:`StepPool`: the top-level cap and the runs already
taken (the parent's steps, one for each plain task of the superstep that the plan allowed
and the driver has not counted yet, and the child runs started so far). A :class:`Relay`
listens to its child's ``NodeStart`` events, takes a step from the pool for each and lowers
the caps of the running children to their runs plus what the pool has left, so a child
stops exactly where the top-level run would have: its core raises ``StepLimitError`` before
the run that would pass the cap, and :meth:`Relay.lift` reports it as the parent's. In the
async driver the entries of a superstep run concurrently and share one pool; a child plans
a superstep and starts its calls with no ``await`` in between, so no two children can plan
against the same remaining step.

The relay also numbers the child's node runs as the parent's steps (``NodeStart.step``,
``NodeEnd.step``, ``run.trace``) and hands the child's events to the parent, by path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from corral.cost import Purse
from corral.errors import CorralError, NodeError, StepLimitError
from corral.runtime.events import Custom, Event, NodeEnd, NodeRetry, NodeStart, RouteTaken
from corral.runtime.run_state import RunState, TaskRun
from corral.runtime.subgraphs import Trace

__all__ = ["Relay", "StepPool", "pool_for"]


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
        """The relays of the children running now."""

    def left(self) -> int:
        """Return how many more node runs the running children may start."""
        return self.max_steps - self.taken

    def shrink(self) -> None:
        """Lower every running child's cap to its started runs plus what is left."""
        left = self.left()
        for member in self.members:
            if member.rs is not None:
                member.rs.max_steps = min(member.own, member.started + left)


def pool_for(rs: RunState, call: TaskRun, *, concurrent: bool) -> StepPool:
    """Return the step pool of subgraph task ``call`` of the current superstep of ``rs``.

    The sync driver runs one entry at a time and counts each finished task before the next
    call: each entry gets a pool of its own, which allows one run to each plain task after
    ``call`` and to each before it that paused (it holds its step until it completes). The
    async driver's entries run at once and share the superstep's pool, which allows one run
    to each plain task of the superstep (they are counted at the barrier).
    """
    number = rs.supersteps + 1
    pool = rs.step_pool if concurrent else None
    if pool is None or pool.superstep != number:
        after = -1 if concurrent else call.position
        done = rs.done
        plain = sum(
            1
            for index, task in enumerate(rs.tasks)
            if index > after and task.node.child is None and index not in done
        )
        held = 0 if concurrent else rs.held_steps  # paused plain tasks before ``call``
        pool = StepPool(number, rs.max_steps, rs.steps + plain + held)
        if concurrent:
            rs.step_pool = pool
    assert isinstance(pool, StepPool)
    return pool


class Relay:
    """One call of a subgraph task: its child's caps, step numbers and events."""

    __slots__ = (
        "counted",
        "emit",
        "entry",
        "is_entry",
        "name",
        "numbers",
        "offset",
        "own",
        "pool",
        "purse",
        "rs",
        "started",
        "watch",
    )

    def __init__(
        self,
        name: str,
        own: int,
        is_entry: Callable[[str], bool],
        pool: StepPool,
        emit: Callable[[Event], None] | None,
        entry: int,
        *,
        concurrent: bool,
        purse: Purse | None = None,
    ) -> None:
        """``name``: the subgraph node's; ``own``: its child graph's ``max_steps``;
        ``is_entry``: whether a child's node (or path) opens an entry of its own;
        ``concurrent``: other children share the pool while this one runs."""
        self.name = name
        self.own = own
        self.is_entry = is_entry
        self.pool = pool
        self.emit = emit
        self.purse = purse
        """The parent run's spending, which the child's run shares."""
        self.entry = entry
        """The step of the subgraph node's ``NodeStart`` in the parent (``NodeStart.entry``)."""
        self.watch = concurrent or emit is not None
        """Whether the relay listens to the child: to count its runs as they start (a shared
        pool) or to hand its events on. Else its runs are consecutive parent steps."""
        self.numbers: dict[int, int] = {}
        """Child step -> parent step, for runs counted as they start."""
        self.offset = pool.taken
        """Child step n is parent step offset+n, unless counted as it started."""
        self.rs: RunState | None = None
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
        self.started = rs.steps
        self.counted = counted
        pool = self.pool
        pool.taken += rs.steps - counted
        self.offset = pool.taken - rs.steps
        rs.max_steps = min(self.own, rs.steps + pool.left())
        if self.watch:
            pool.members.append(self)
            rs.listen(self.event)

    def done(self) -> None:
        """Stop counting for this call (its child ended, paused or failed)."""
        if self in self.pool.members:
            self.pool.members.remove(self)

    def number(self, step: int) -> int:
        """Return the parent's step number of the child's step ``step``."""
        return self.numbers.get(step, self.offset + step)

    def path(self, node: str) -> str:
        """Return the path of the child's ``node`` (a path itself inside a grandchild)."""
        return f"{self.name}/{node}"

    def trace(self, rs: RunState) -> Trace:
        """Return the child's trace of this call, named by path, numbered as the parent's."""
        return [(self.number(item[0]), self.path(item[1]), *item[2:]) for item in rs.trace]

    def event(self, event: Event) -> None:
        """Count a child's node run as it starts; hand a node event or route to the parent:
        named by path, numbered as the parent's step, and with the entry it comes from
        (``NodeStart.entry``). The child's checkpoints and supersteps are its own."""
        if type(event) is NodeStart and not self.is_entry(event.node):
            pool = self.pool
            pool.taken += 1
            self.numbers[event.step] = pool.taken
            self.started = event.step
            pool.shrink()
        emit = self.emit
        if emit is None:
            return
        path = self.path
        if isinstance(event, NodeStart):
            inner = event.entry
            if not inner and self.is_entry(event.node):  # it opens an entry of its own
                inner = (event.step,)
            emit(dataclasses.replace(event, node=path(event.node), step=self.number(event.step),
                                     entry=(self.entry, *inner)))  # fmt: skip
        elif isinstance(event, NodeEnd | NodeRetry | Custom):
            emit(dataclasses.replace(event, node=path(event.node), step=self.number(event.step)))
        elif isinstance(event, RouteTaken):
            emit(dataclasses.replace(event, source=path(event.source), target=path(event.target),
                                     entry=(self.entry, *event.entry)))  # fmt: skip

    def lift(self, exc: CorralError) -> CorralError:
        """Return a child's error as the parent reports it: node names become paths, step
        numbers the parent's, and a cap the top-level run set is reported as the top level's."""
        name = self.name
        if isinstance(exc, StepLimitError):
            path = self.path(exc.node)
            if exc.max_steps < self.own:  # capped by what the top-level run had left
                steps = self.pool.taken - self.started + exc.steps  # runs not counted yet too
                top_max = self.pool.max_steps
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
            path, step = self.path(exc.node), self.number(exc.step)
            text = str(exc).replace(f"(step {exc.step}", f"(step {step}", 1)  # the parent's
            msg = f"in subgraph {name!r}: {text}"
            return NodeError(msg, node=path, step=step, attempts=exc.attempts)
        return exc
