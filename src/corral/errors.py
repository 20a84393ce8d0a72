"""Every error corral raises: one root, ``CorralError``, and a subclass per kind of failure.

Each error keeps its facts as attributes (``.node``, ``.step``, ``.state``...) so callers and
tests never parse the message. Messages name the offending things and say how to fix them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from corral.analysis.diagnostic import Diagnostic

__all__ = [
    "BudgetError",
    "BusyThreadError",
    "CheckpointError",
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
    "RouteError",
    "RunCancelledError",
    "RunFailedError",
    "RunningLoopError",
    "SerializationError",
    "StepLimitError",
    "StreamModeError",
    "StuckJoinError",
    "ThreadStateError",
    "ToolError",
    "WaitTimeoutError",
]


class CorralError(Exception):
    """The root of every error corral raises."""


class GraphError(CorralError):
    """A graph that cannot be compiled or run as declared.

    ``diagnostics`` holds the analyser's findings when the error comes from ``compile()``;
    it is empty for other misuse (an interrupt without a checkpointer, for example).
    """

    def __init__(self, message: str, *, diagnostics: Sequence[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)


class InterruptWithoutCheckpointerError(GraphError):
    """``interrupt()`` was called where no checkpointer can keep the paused run."""


class _RunLimitError(CorralError, RuntimeError):
    """A run stopped by one of its bounds; ``state`` is the state it had reached."""

    def __init__(self, message: str, *, state: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.state: dict[str, Any] = dict(state or {})


class StepLimitError(_RunLimitError):
    """The run reached ``max_steps`` node runs and was about to run ``node``."""

    def __init__(
        self,
        message: str,
        *,
        steps: int,
        max_steps: int,
        node: str,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, state=state)
        self.steps = steps
        self.max_steps = max_steps
        self.node = node


class NodeCapError(_RunLimitError):
    """A node was about to run more often than its ``max_runs``."""

    def __init__(
        self,
        message: str,
        *,
        node: str,
        max_runs: int,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, state=state)
        self.node = node
        self.max_runs = max_runs


class GuardExhaustedError(_RunLimitError):
    """A guarded route was used up and its guard has no ``otherwise`` target."""

    def __init__(
        self,
        message: str,
        *,
        source: str,
        target: str,
        max: int,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, state=state)
        self.source = source
        self.target = target
        self.max = max


class BudgetError(_RunLimitError):
    """The run stopped before ``node``: its declared ``cost`` on top of what the run has
    ``spent`` would pass the ``budget``. The thread is checkpointed; go on with a larger one.

    ``spent`` and ``cost`` are :class:`~corral.Cost` values, ``budget`` a
    :class:`~corral.Budget` (typed ``Any`` here: :mod:`corral.cost` raises these errors).
    """

    def __init__(
        self,
        message: str,
        *,
        node: str,
        spent: Any,
        cost: Any,
        budget: Any,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, state=state)
        self.node = node
        self.spent = spent
        self.cost = cost
        self.budget = budget


class CostExceededError(_RunLimitError):
    """A node run spent more than it declared: ``declared`` (its cost times its attempts;
    ``None``: it declares none) and ``spent`` are :class:`~corral.Cost` values."""

    def __init__(self, message: str, *, node: str, declared: Any, spent: Any) -> None:
        super().__init__(message)
        self.node = node
        self.declared = declared
        self.spent = spent


class RouteError(CorralError, ValueError):
    """A router (or ``Command``) chose a target outside its annotation."""

    def __init__(self, message: str, *, router: str, value: object, allowed: Sequence[str]) -> None:
        super().__init__(message)
        self.router = router
        self.value = value
        self.allowed: tuple[str, ...] = tuple(allowed)


class StuckJoinError(RouteError):
    """A run would end while a ``wait_for`` join still waits for some of its nodes (CR304)."""

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
        self.waiting_for: tuple[str, ...] = tuple(waiting_for)
        """The nodes of its ``wait_for`` that have not run since the join's last run."""
        self.state: dict[str, Any] = dict(state or {})


class InvalidUpdateError(CorralError, ValueError):
    """A node returned an update the state cannot take.

    ``nodes`` names every node involved (two for a parallel write without a reducer);
    ``key`` is the offending state key, or ``None`` when the update is not a dict at all.
    """

    def __init__(
        self, message: str, *, node: str, key: str | None = None, nodes: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.node = node
        self.key = key
        self.nodes: tuple[str, ...] = tuple(nodes) or (node,)


class NodeError(CorralError):
    """An exception raised inside a node or router; the original is ``__cause__``.

    ``attempts`` is how many times the node was tried (more than 1 under a ``Retry``).
    """

    def __init__(self, message: str, *, node: str, step: int, attempts: int = 1) -> None:
        super().__init__(message)
        self.node = node
        self.step = step
        self.attempts = attempts


class NodeTimeoutError(CorralError, TimeoutError):
    """An async node that ran longer than its ``timeout=`` seconds and was cancelled."""

    def __init__(self, message: str, *, node: str, timeout_s: float) -> None:
        super().__init__(message)
        self.node = node
        self.timeout_s = timeout_s


class CheckpointError(CorralError):
    """A checkpoint store that cannot be read or written safely (corrupt, foreign, stale)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SerializationError(CheckpointError, TypeError):
    """A value a checkpoint cannot store: not JSON-friendly and no serializer took it.

    ``location`` says where it sits (``state['drafts'][2]``); ``value_type`` is its type.
    """

    def __init__(self, message: str, *, location: str, value_type: type[Any]) -> None:
        super().__init__(message)
        self.location = location
        self.value_type = value_type


class ConcurrentRunError(CheckpointError):
    """A checkpoint refused because its parent is no longer the thread's newest checkpoint.

    Another run of the same thread committed first; nothing of this run's step was stored.
    ``expected`` is the parent this run wrote against, ``newest`` the thread's newest.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        expected: str | None,
        newest: str | None,
        path: str | None = None,
    ) -> None:
        super().__init__(message, path=path)
        self.thread_id = thread_id
        self.expected = expected
        self.newest = newest


class LeaseLostError(CheckpointError):
    """A worker's write refused because the run's lease is no longer the worker's.

    The lease expired (the worker froze, stalled or lost the database) and another worker
    claimed the run, or the worker released it when it stopped; the run belongs to its new
    holder now. Nothing of the refused write was stored. ``run_id``, ``thread_id``,
    ``owner`` (the worker that lost it) and ``attempt`` (its claim's number) say which
    lease.
    """

    def __init__(
        self,
        message: str,
        *,
        run_id: int,
        thread_id: str,
        owner: str,
        attempt: int,
        path: str | None = None,
    ) -> None:
        super().__init__(message, path=path)
        self.run_id = run_id
        self.thread_id = thread_id
        self.owner = owner
        self.attempt = attempt


class ToolError(CorralError, TypeError):
    """A function that cannot be a tool of a ``Toolbox`` (``corral.agents``).

    Raised when the toolbox is built, never while it runs: a failing tool call becomes a
    tool message marked ``is_error`` instead. ``tool`` names the function.
    """

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(message)
        self.tool = tool


class ModelUnavailableError(CorralError, ConnectionError):
    """A model provider could not answer now: unreachable, timed out, rate limited or 5xx.

    A ``ConnectionError``, so the default ``Retry`` retries it; ``retry_after_s`` (the
    provider's ``Retry-After``) is the least wait before the next attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status
        self.retry_after_s = retry_after_s


class RunFailedError(CorralError):
    """A queued run that a worker ended with an error (``app.wait`` raises it).

    ``error`` is the worker's one-line account (``NodeError: node 'fetch' raised ...``).
    """

    def __init__(self, message: str, *, thread_id: str, run_id: int, error: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.run_id = run_id
        self.error = error


class WaitTimeoutError(CorralError, TimeoutError):
    """``app.wait(thread_id, timeout=...)`` ran out of time before the thread's run ended."""

    def __init__(self, message: str, *, thread_id: str, timeout_s: float, status: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.timeout_s = timeout_s
        self.status = status


class ThreadStateError(CorralError, ValueError):
    """A call asks a thread for what its state cannot give (continue, answer, resume)."""

    def __init__(self, message: str, *, thread_id: str | None = None) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class StreamModeError(CorralError, ValueError):
    """``stream``/``astream`` got a ``mode`` that is not one of the stream modes."""

    def __init__(self, message: str, *, mode: object) -> None:
        super().__init__(message)
        self.mode = mode


class LangGraphArgumentError(CorralError, TypeError):
    """A run was called with LangGraph's spelling of an argument (``stream_mode=``, ``config``)."""

    def __init__(self, message: str, *, argument: str, instead: str) -> None:
        super().__init__(message)
        self.argument = argument
        self.instead = instead


class RunningLoopError(CorralError, RuntimeError):
    """A graph with async nodes was run synchronously inside a running event loop."""

    def __init__(self, message: str, *, method: str) -> None:
        super().__init__(message)
        self.method = method


class BusyThreadError(CorralError):
    """``corral serve`` refused a run (``multitask_strategy="reject"``): the thread is busy."""

    def __init__(self, message: str, *, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class RunCancelledError(CorralError):
    """A served run stopped before its next node because a cancel was asked."""

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id
