"""Every error corral raises: one root, ``CorralError``, and a subclass per kind of failure.

Each error keeps its facts as attributes (``.node``, ``.step``, ``.state``...) so callers and
tests never parse the message. Messages name the offending things and say how to fix them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from typing_extensions import dataclass_transform

if TYPE_CHECKING:
    from corral.analysis.diagnostic import Diagnostic

__all__ = [
    "BudgetError",
    "BusyThreadError",
    "CheckpointError",
    "ConcurrentRunError",
    "CorralError",
    "CostExceededError",
    "GraphError",
    "GuardExhaustedError",
    "InterruptWithoutCheckpointerError",
    "InvalidUpdateError",
    "LangGraphArgumentError",
    "LeaseLostError",
    "ModelUnavailableError",
    "NodeCapError",
    "NodeError",
    "NodeTimeoutError",
    "RouteError",
    "RunCancelledError",
    "RunFailedError",
    "RunLimitError",
    "RunningLoopError",
    "SerializationError",
    "StepLimitError",
    "StreamModeError",
    "StuckJoinError",
    "ThreadStateError",
    "ToolError",
    "WaitTimeoutError",
]


@dataclass_transform(kw_only_default=True, eq_default=False)
@dataclass(eq=False, repr=False)
class CorralError(Exception):
    """The root of every error corral raises.

    Every subclass is made a keyword-only dataclass: its annotated facts are its keyword
    arguments and attributes. ``eq=False`` and ``repr=False`` keep an exception's identity
    and repr.
    """

    message: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(eq=False, repr=False, kw_only=True)(cls)

    def __post_init__(self) -> None:
        super().__init__(self.message)


class GraphError(CorralError):
    """A graph that cannot be compiled or run as declared.

    ``diagnostics`` holds the analyser's findings when the error comes from ``compile()``;
    it is empty for other misuse (an interrupt without a checkpointer, for example).
    """

    diagnostics: tuple[Diagnostic, ...] = ()


class InterruptWithoutCheckpointerError(GraphError):
    """``interrupt()`` was called where no checkpointer can keep the paused run."""


class RunLimitError(CorralError, RuntimeError):
    """A run stopped by one of its bounds (catch it to handle them all); ``state`` is the
    state it had reached (the top-level run's, when raised inside a subgraph, whose nodes
    the error names by path)."""

    state: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.state = dict(self.state)  # a copy: the run goes on changing its own


class StepLimitError(RunLimitError):
    """The run reached ``max_steps`` node runs and was about to run ``node``."""

    steps: int
    max_steps: int
    node: str


class NodeCapError(RunLimitError):
    """A node was about to run more often than its ``max_runs``."""

    node: str
    max_runs: int


class GuardExhaustedError(RunLimitError):
    """A guarded route was used up and its guard has no ``otherwise`` target."""

    source: str
    target: str
    max: int


class BudgetError(RunLimitError):
    """The run stopped before ``node``: its declared ``cost`` on top of what the run has
    ``spent`` would pass the ``budget``. The thread is checkpointed; go on with a larger one.

    ``spent`` and ``cost`` are :class:`~corral.Cost` values, ``budget`` a
    :class:`~corral.Budget` (typed ``Any`` here: :mod:`corral.cost` raises these errors).
    """

    node: str
    spent: Any
    cost: Any
    budget: Any


class CostExceededError(RunLimitError):
    """A node run spent more than it declared: ``declared`` (its cost times its attempts;
    ``None``: it declares none) and ``spent`` are :class:`~corral.Cost` values."""

    node: str
    declared: Any
    spent: Any


class RouteError(CorralError, ValueError):
    """A router (or ``Command``) chose a target outside its annotation."""

    router: str
    value: object
    allowed: Sequence[str]

    def __post_init__(self) -> None:
        super().__post_init__()
        self.allowed = tuple(self.allowed)


class StuckJoinError(RouteError):
    """A run would end while a ``wait_for`` join still waits for some of its nodes (CR304).

    ``waiting_for`` holds the nodes of its ``wait_for`` that have not run since the join's
    last run; ``router`` is the join and ``allowed`` its whole ``wait_for``.
    """

    def __init__(
        self,
        message: str,
        *,
        join: str,
        waiting_for: Sequence[str],
        wait_for: Sequence[str],
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, router=join, value=None, allowed=wait_for)
        self.join = join
        self.waiting_for = tuple(waiting_for)
        self.state: dict[str, Any] = dict(state or {})


class InvalidUpdateError(CorralError, ValueError):
    """A node returned an update the state cannot take.

    ``nodes`` names every node involved (two for a parallel write without a reducer);
    ``key`` is the offending state key, or ``None`` when the update is not a dict at all.
    """

    node: str
    key: str | None = None
    nodes: Sequence[str] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        self.nodes = tuple(self.nodes) or (self.node,)


class NodeError(CorralError):
    """An exception raised inside a node or router; the original is ``__cause__``.

    ``attempts`` is how many times the node was tried (more than 1 under a ``Retry``).
    """

    node: str
    step: int
    attempts: int = 1


class NodeTimeoutError(CorralError, TimeoutError):
    """An async node that ran longer than its ``timeout=`` seconds and was cancelled."""

    node: str
    timeout_s: float


class CheckpointError(CorralError):
    """A checkpoint store that cannot be read or written safely (corrupt, foreign, stale)."""

    path: str | None = None


class SerializationError(CheckpointError, TypeError):
    """A value a checkpoint cannot store: not JSON-friendly and no serializer took it.

    ``location`` says where it sits (``state['drafts'][2]``); ``value_type`` is its type.
    """

    location: str
    value_type: type[Any]


class ConcurrentRunError(CheckpointError):
    """A checkpoint refused because its parent is no longer the thread's newest checkpoint.

    Another run of the same thread committed first; nothing of this run's step was stored.
    ``expected`` is the parent this run wrote against, ``newest`` the thread's newest.
    """

    thread_id: str
    expected: str | None
    newest: str | None


class LeaseLostError(CheckpointError):
    """A worker's write refused because the run's lease is no longer the worker's.

    The lease expired (the worker froze, stalled or lost the database) and another worker
    claimed the run, or the worker released it when it stopped; the run belongs to its new
    holder now. Nothing of the refused write was stored. ``run_id``, ``thread_id``,
    ``owner`` (the worker that lost it) and ``attempt`` (its claim's number) say which
    lease.
    """

    run_id: int
    thread_id: str
    owner: str
    attempt: int


class ToolError(CorralError, TypeError):
    """A function that cannot be a tool of a ``Toolbox`` (``corral.agents``).

    Raised when the toolbox is built, never while it runs: a failing tool call becomes a
    tool message marked ``is_error`` instead. ``tool`` names the function.
    """

    tool: str


class ModelUnavailableError(CorralError, ConnectionError):
    """A model provider could not answer now: unreachable, timed out, rate limited or 5xx.

    A ``ConnectionError``, so the default ``Retry`` retries it; ``retry_after_s`` (the
    provider's ``Retry-After``) is the least wait before the next attempt.
    """

    endpoint: str
    status: int | None = None
    retry_after_s: float | None = None


class RunFailedError(CorralError):
    """A queued run that a worker ended with an error (``app.wait`` raises it).

    ``error`` is the worker's one-line account (``NodeError: node 'fetch' raised ...``).
    """

    thread_id: str
    run_id: int
    error: str


class WaitTimeoutError(CorralError, TimeoutError):
    """``app.wait(thread_id, timeout=...)`` ran out of time before the thread's run ended."""

    thread_id: str
    timeout_s: float
    status: str


class ThreadStateError(CorralError, ValueError):
    """A call asks a thread for what its state cannot give (continue, answer, resume)."""

    thread_id: str | None = None
    checkpoint_id: str | None = None


class StreamModeError(CorralError, ValueError):
    """``stream``/``astream`` got a ``mode`` that is not one of the stream modes."""

    mode: object


class LangGraphArgumentError(CorralError, TypeError):
    """A run was called with LangGraph's spelling of an argument (``stream_mode=``, ``config``)."""

    argument: str
    instead: str


class RunningLoopError(CorralError, RuntimeError):
    """A graph with async nodes was run synchronously inside a running event loop."""

    method: str


class BusyThreadError(CorralError):
    """``corral serve`` refused a run (``multitask_strategy="reject"``): the thread is busy."""

    thread_id: str


class RunCancelledError(CorralError):
    """A served run stopped before its next node because a cancel was asked."""

    run_id: str
