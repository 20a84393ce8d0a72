"""Typed records a run produces: events for progress and tracing, interrupts, trace entries.

``stream(mode="events")`` yields these records and ``invoke(on_event=...)`` hands each one to
a callback as it happens (a ``NodeStart`` before the node runs). They are frozen dataclasses
with slots, safe to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from corral.cost import Cost

__all__ = [
    "CheckpointWritten",
    "Custom",
    "Event",
    "Interrupt",
    "NodeEnd",
    "NodeRetry",
    "NodeStart",
    "Paused",
    "RouteTaken",
    "RunEnd",
    "StateSnapshot",
    "SuperstepEnd",
    "TraceRecord",
]


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A pause waiting for a person: answer it with ``invoke(Resume(value), thread_id=...)``.

    ``value`` is the payload given to ``interrupt()``; it is ``None`` for a pause asked for
    with ``interrupt_before`` / ``interrupt_after``.
    """

    id: str
    node: str
    value: Any = None
    when: Literal["during", "before", "after"] = "during"
    """Where the run paused: inside the node (``interrupt()``), before it or after it."""


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One node run of ``run.trace`` (which keeps the most recent 100)."""

    step: int
    """The run's step number of this node run (1 for the first node run of the run)."""
    node: str
    update: Mapping[str, Any] | None
    seconds: float
    attempt: int = 1
    """Which attempt this was; a node under a ``Retry`` has one record per attempt."""
    error: str | None = None
    """Why the attempt failed (``"ConnectionError: reset"``), for an attempt that was retried."""


@dataclass(frozen=True, slots=True)
class NodeStart:
    """A node is about to run."""

    step: int
    node: str
    superstep: int
    """The 1-based superstep of the run the node runs in."""
    send: bool = False
    """True when the run was started by a ``Send`` (the node gets the ``Send``'s arg)."""
    entry: tuple[int, ...] = ()
    """Inside a subgraph: which entry of it the run belongs to (see :class:`RouteTaken`)."""


@dataclass(frozen=True, slots=True)
class NodeEnd:
    """A node finished; ``update`` is what it returned (``None`` for no change)."""

    step: int
    node: str
    update: Mapping[str, Any] | None
    seconds: float
    spent: Cost = field(default_factory=Cost)
    """What this node run spent (``ctx.spend``)."""


@dataclass(frozen=True, slots=True)
class NodeRetry:
    """An attempt of a node under a ``Retry`` failed; the node runs again after ``delay_s``."""

    step: int
    node: str
    attempt: int
    """The attempt that failed (1 for the first)."""
    error: str
    """The error, as ``"ConnectionError: reset"``."""
    delay_s: float
    """Seconds until the next attempt."""


@dataclass(frozen=True, slots=True)
class Custom:
    """A value a node sent with ``ctx.emit(value)`` while it ran (tokens, progress)."""

    node: str
    value: Any
    step: int = 0
    """The step of the node run that sent it."""


@dataclass(frozen=True, slots=True)
class RouteTaken:
    """The run goes from ``source`` to ``target`` (``"__end__"`` when a branch finishes).

    ``guard`` is ``(count, max)`` after this route was counted, for a guarded route;
    ``via`` says how the route was chosen (``"otherwise"`` when a used-up guard redirected).
    """

    source: str
    target: str
    via: Literal["then", "router", "command", "send", "otherwise", "join"]
    guard: tuple[int, int] | None = None
    entry: tuple[int, ...] = ()
    """Empty at the top level. Inside a subgraph (names are paths, ``research/plan``), which
    entry of it the event comes from: the ``step`` of the subgraph node's own ``NodeStart``
    in its graph, one per level, outermost first, so that entries running side by side (a
    ``Send`` fan-out) tell apart. A subgraph node's ``NodeStart`` names the entry it opens:
    the tuple its child's events carry (``(step,)`` for one at the top level)."""


@dataclass(frozen=True, slots=True)
class SuperstepEnd:
    """A superstep's updates were merged; ``next`` names the nodes of the next one."""

    superstep: int
    steps: int
    next: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CheckpointWritten:
    """A checkpoint was saved."""

    thread_id: str
    checkpoint_id: str
    superstep: int
    status: str


@dataclass(frozen=True, slots=True)
class Paused:
    """The run paused for a person; the interrupts wait for an answer."""

    interrupts: tuple[Interrupt, ...]


@dataclass(frozen=True, slots=True)
class RunEnd:
    """The run reached ``END`` (``status == "done"``) or paused (``"interrupted"``)."""

    status: str
    steps: int
    supersteps: int
    spent: Cost = field(default_factory=Cost)
    """What the run has spent (``run.spent``)."""


Event: TypeAlias = (
    NodeStart
    | NodeEnd
    | NodeRetry
    | Custom
    | RouteTaken
    | SuperstepEnd
    | CheckpointWritten
    | Paused
    | RunEnd
)
"""Any record ``stream(mode="events")`` yields."""


@dataclass(frozen=True, slots=True)
class RunError:
    """The error a thread's last run failed with, as its checkpoint records it."""

    type: str
    """The error's class name (``"NodeError"``, ``"StepLimitError"``...)."""
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


@dataclass(frozen=True)
class StateSnapshot:
    """A thread's state at one checkpoint, as ``get_state`` and ``history`` return it."""

    values: dict[str, Any]
    next: tuple[str, ...]
    """The nodes the next superstep runs (empty once the run finished)."""
    steps: int
    supersteps: int
    guards: dict[tuple[str, str], int]
    checkpoint_id: str
    parent_id: str | None
    status: str
    """``"running"``, ``"done"``, ``"interrupted"`` or ``"error"`` (the run failed: see
    :attr:`error`)."""
    interrupts: tuple[Interrupt, ...] = ()
    source: str = "loop"
    """What wrote the checkpoint: ``"input"``, ``"loop"``, ``"update"`` (a fork)."""
    runs: dict[str, int] = field(default_factory=dict)
    subgraphs: dict[str, StateSnapshot] = field(default_factory=dict)
    """With ``get_state(thread, subgraphs=True)``: the paused children, by path
    (``"review"``, ``"outer/inner"``)."""
    error: RunError | None = None
    """When ``status == "error"``: the error the run failed with."""
    spent: Cost = field(default_factory=Cost)
    """What the thread's run had spent at this checkpoint (``ctx.spend``), across resumes."""
