"""The record of one run: its state, counters, tasks and pauses, and the typed records in it.

A :class:`RunState` is everything a run carries from one superstep to the next and saves in a
checkpoint. The superstep core (:mod:`corral.runtime.superstep`) changes it; the drivers
(:mod:`corral.runtime.drivers`) only read the tasks to call. The small records here: a
:class:`Task` to run, a :data:`Call` (a task of the current superstep with its place and
step number), a :data:`Result` (a finished one, with what it returned) and a :class:`Pause` (a
run stopped for a person).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from corral.cost import Purse
from corral.runtime.child_steps import StepPool
from corral.runtime.context import Context
from corral.runtime.events import Event, Interrupt, Paused
from corral.runtime.state import IMMUTABLE, FlatView, StateView
from corral.runtime.tables import Node, Tables, Task

if TYPE_CHECKING:
    from corral.control import Send

__all__ = [
    "TRACE_LIMIT",
    "CheckpointWriter",
    "Pause",
    "RunState",
    "Task",
]

TRACE_LIMIT = 100
"""``run.trace`` keeps the records of this many most recent node runs (see docs/concepts.md)."""

Targets = tuple["str | Send[str]", ...]
"""Route targets: node names (or ``END``) and ``Send`` items."""


Call = tuple[int, Task, int]
"""A call the core planned: its position in the superstep (the merge order and the key of its
saved records), its task, and the run's step number its node run has (``ctx.step``)."""

Result = tuple[int, Node, Any, "Targets | None", int]
"""A finished task: its position, node, update (a dict, ``None``, or a subgraph entry's child
writes), the targets its ``Command`` chose, and step number (``0``: restored, it keeps none)."""


@dataclass(slots=True)
class Pause:
    """A run stopped for a person: before, inside (``interrupt()``) or after a node."""

    task: int
    """The index of the task in its superstep."""
    node: str
    value: Any
    when: Literal["before", "during", "after"]
    index: int | None = None
    """Which ``interrupt()`` call of the node run paused (``during`` only)."""
    id: str | None = None
    """The stable id a ``Resume({id: value})`` answers; set when the pause is saved."""

    def interrupt(self) -> Interrupt:
        """Return the public record of this pause."""
        assert self.id is not None
        return Interrupt(self.id, self.node, self.value, self.when)


class CheckpointWriter(Protocol):
    """Where the core saves a run's checkpoints: a :class:`corral.runtime.persist.ThreadWriter`,
    whose methods say what they write. A run without a checkpointer has none
    (``RunState.checkpoints is None``)."""

    last_status: str
    """The status of the last checkpoint written."""

    def save_task(self, rs: RunState, result: Result) -> None: ...

    def save(
        self,
        rs: RunState,
        writes: Sequence[tuple[str, Mapping[str, Any]]],
        pauses: list[Pause],
        status: str = "",
        *,
        done: Sequence[Result] = (),
        reroute: list[Result] | None = None,
        error: Exception | None = None,
    ) -> None: ...


@dataclass(slots=True, eq=False, repr=False)
class RunState:
    """Everything one run carries between supersteps (and saves in a checkpoint)."""

    tables: Tables
    max_steps: int
    deps: Any
    thread_id: str | None
    purse: Purse
    """What the run has spent and may spend (a subgraph's child run: its parent's purse)."""
    trace: MutableSequence[tuple[Any, ...]]
    """The fields of a ``TraceRecord`` per node run (and per attempt that was retried): the
    most recent ``TRACE_LIMIT``; a subgraph's child run keeps all of its call's, which its
    parent's trace takes in."""
    guards: dict[tuple[str, str], int]
    """How often each guarded route was taken, keyed ``(source, target)``."""
    values: dict[str, Any] = field(default_factory=dict)
    viewed: dict[str, Any] | None = None
    """The ``values`` that ``shared_view`` was made of."""
    shared_view: FlatView | None = None
    """The view all readers of ``viewed`` share, when its values are all immutable."""
    tasks: Sequence[Task] = field(default_factory=list)
    """The tasks of the next (or current) superstep, in merge order."""
    done: dict[int, Result] = field(default_factory=dict)
    """Tasks of the current superstep that finished in an earlier, interrupted attempt."""
    answers: dict[int, list[Any]] = field(default_factory=dict)
    """Answers to ``interrupt()`` calls, per task index of the current superstep."""
    reroute: list[Result] | None = None
    """Tasks whose routes failed after their updates were merged: route them first."""
    steps: int = 0
    supersteps: int = 0
    runs: dict[str, int] = field(default_factory=dict)
    arrived: dict[str, set[str]] = field(default_factory=dict)
    """Per join: the nodes it waits for that finished a run since its own last run."""
    held: list[str] = field(default_factory=list)
    """Joins that a route reached and that still wait for some of their nodes."""
    status: str = "running"
    interrupts: list[Interrupt] = field(default_factory=list)
    pause_before: frozenset[str] = frozenset()
    pause_after: frozenset[str] = frozenset()
    emit: Callable[[Event], None] | None = None
    """Where events go (``on_event``, a stream, listeners); ``None``: no one (node runs are
    timed only when someone receives events)."""
    checkpoints: CheckpointWriter | None = None
    checkpoint_id: str | None = None
    retried: dict[int, int] = field(default_factory=dict)
    """Per task position of this superstep: the attempt that succeeded, when not the 1st."""
    checkpoint_meta: dict[str, Any] | None = None
    """Entries added to the meta of each checkpoint this run writes (telemetry writes the
    run span's ``traceparent`` there, for the run that continues the thread)."""
    log: list[tuple[str, dict[str, Any]]] | None = None
    """Every write merged, in order, when someone reads them back (a subgraph's child
    run without a checkpointer); ``None``: not kept."""
    step_pool: StepPool | None = None
    """The top-level run's step pool (see :mod:`corral.runtime.child_steps`): of the
    current superstep, which its subgraph entries share; a subgraph's child run has the
    pool of the superstep it was entered in, and its node runs take their numbers from it."""
    entry: tuple[int, ...] = ()
    """A subgraph's child run: the entries it runs inside, as its events say
    (``NodeStart.entry``); ``()`` at the top level."""

    def context(self, node: str, step: int) -> Context[Any]:
        """Return the ``ctx`` a node (or the router of ``node``) receives at ``step``."""
        spec = self.tables.nodes[node]
        return Context(
            deps=self.deps,
            node=node,
            step=step,
            thread_id=self.thread_id,
            runs=self.runs,
            guards=self.guards,
            emit=self.emit,
            purse=self.purse,
            limit=spec.cost,
            path=spec.path,
        )

    def view(self) -> FlatView:
        """Return the read-only view of the state that a node or router reads.

        While every value is immutable, the readers of one state share one ``FlatView``
        (nothing in it can change); else each gets a ``StateView`` of its own, which copies
        a mutable value on its first read.
        """
        values = self.values
        if self.viewed is not values:
            self.viewed = values
            flat = IMMUTABLE.issuperset(map(type, values.values()))
            self.shared_view = FlatView(values) if flat else None
        return self.shared_view or StateView(values)

    def pause(self, pauses: list[Pause]) -> None:
        """Stop the run for a person: its status and interrupts say what it waits for."""
        self.status = "interrupted"
        self.interrupts = [pause.interrupt() for pause in pauses]
        if self.emit is not None:
            self.emit(Paused(tuple(self.interrupts)))

    def listen(self, listener: Callable[[Event], None]) -> None:
        """Send every event of this run to ``listener`` too (telemetry, progress)."""
        previous = self.emit
        if previous is None:
            self.emit = listener
        else:

            def both(event: Event) -> None:
                previous(event)
                listener(event)

            self.emit = both
