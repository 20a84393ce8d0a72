"""``CompiledGraph``: a checked graph that can run, and ``Run``, what a run returns.

``invoke``/``stream`` drive the synchronous loop and ``ainvoke``/``astream`` the async one
(see :mod:`corral.runtime.drivers`); a graph with an async node or router always runs on the
async loop (``invoke`` starts a fresh event loop for it). Threads, resumes, interrupts and
forks are set up by :mod:`corral.runtime.threads`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Generic, Literal, TypedDict, overload

from typing_extensions import TypeVar, Unpack

from corral._habits import langgraph_hints
from corral.checkpoint.base import Checkpointer, Hold, check_checkpointer, holding
from corral.control import AnswerT, Command, Resume
from corral.cost import Budget
from corral.errors import CheckpointError, RunningLoopError
from corral.runtime import streams, threads
from corral.runtime.child_graph import ChildGraph, thread_state
from corral.runtime.context import DepsT
from corral.runtime.drivers import run_async, run_sync
from corral.runtime.events import Event, StateSnapshot
from corral.runtime.run import Run, run_of
from corral.runtime.run_state import RunState
from corral.runtime.streams import Picker, StreamMode
from corral.runtime.tables import Tables
from corral.runtime.telemetry import RunTracer
from corral.spec import GraphSpec

__all__ = ["CompiledGraph", "Run"]

StateT = TypeVar("StateT")
InputT = TypeVar("InputT", contravariant=True, default=Any)
"""What ``invoke`` takes as input: the graph's update schema (the state's keys, all optional)."""
PointsT = TypeVar("PointsT", Iterator[None], AsyncIterator[Any])


class RunOptions(TypedDict, Generic[DepsT], total=False):
    """The keywords every way of running a graph takes (``invoke``, ``ainvoke``, ``stream``,
    ``astream``), as :meth:`CompiledGraph.invoke` describes them."""

    thread_id: str | None
    checkpoint_id: str | None
    max_steps: int | None
    deps: DepsT | None
    on_event: Callable[[Event], None] | None
    budget: Budget | None


class CompiledGraph(Generic[StateT, InputT, DepsT, AnswerT]):
    """A checked graph, ready to run.

    Generic in the graph's state schema (what :class:`Run` holds) and in what ``invoke``
    takes: the graph's update schema when it has one (``Graph(State, StateUpdate)``), so an
    unknown input key is a type error; any mapping for ``Graph(State)``.

    >>> from typing import TypedDict
    >>> from corral import Graph, END
    >>> class State(TypedDict):
    ...     n: int
    >>> g = Graph(State)
    >>> @g.node(start=True, then=END)
    ... def bump(state: State) -> dict[str, object]:
    ...     return {"n": state["n"] + 1}
    >>> g.compile().invoke({"n": 1}).state
    {'n': 2}
    """

    def __init__(
        self,
        spec: GraphSpec,
        *,
        checkpointer: Checkpointer | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
        max_steps: int | None = None,
        telemetry: bool = False,
    ) -> None:
        self.spec = spec
        check_checkpointer(checkpointer)
        self.checkpointer = checkpointer
        self.telemetry = telemetry
        """Emit OpenTelemetry spans for each run (:mod:`corral.runtime.telemetry`)."""
        self.interrupt_before = tuple(interrupt_before)
        self.interrupt_after = tuple(interrupt_after)
        self.max_steps = threads.check_cap(max_steps) if max_steps is not None else spec.max_steps
        self._settings = _compiled(
            spec, checkpointer, self.max_steps, self.interrupt_before, self.interrupt_after
        )

    def __repr__(self) -> str:
        label = f" {self.spec.name!r}" if self.spec.name else ""
        return f"<CompiledGraph{label} nodes={list(self._settings.tables.nodes)}>"

    # ------------------------------------------------------------------ running

    @langgraph_hints(2)
    def invoke(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> Run[StateT]:
        """Run the graph from ``input`` to ``END`` (or a pause) and return the :class:`Run`.

        Args:
            input: the initial state (merged through the reducers); ``None`` to continue
                ``thread_id`` from its last checkpoint; ``Resume(value)`` to answer a pending
                ``interrupt()``.
            thread_id: the thread to start or continue (one is created when a checkpointer
                is set and none is given).
            checkpoint_id: continue from this older checkpoint instead (time travel).
            max_steps: the most node runs this run may take (overrides the graph's).
            deps: handed to every node and router as ``ctx.deps``.
            on_event: called with every event record as it happens (progress, tracing).
            budget: the most this run may spend (overrides the graph's ``budget=``).

        Raises:
            StepLimitError, NodeCapError, GuardExhaustedError, BudgetError: a bound stopped
                the run.
            CostExceededError: a node spent more than its declared ``cost``.
            NodeError: a node or router raised; the original is its ``__cause__``.
            InvalidUpdateError, RouteError: a node or router returned something invalid.
            TypeError: a keyword that is none of the above.
        """
        rs, points = self._run("invoke", input, options)
        for _ in points:
            pass
        return run_of(rs)

    @langgraph_hints(2)
    async def ainvoke(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        **options: Unpack[RunOptions[DepsT]],
    ) -> Run[StateT]:
        """Run like :meth:`invoke`, running the async nodes of a superstep concurrently."""
        rs, ending, _ = self._start("ainvoke", input, options, None)
        async for _ in _awatched(run_async(rs), ending):
            pass
        return run_of(rs)

    @overload
    def stream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["updates"] = ...,
        **options: Unpack[RunOptions[DepsT]],
    ) -> Iterator[tuple[str, dict[str, Any]]]: ...
    @overload
    def stream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["values"],
        **options: Unpack[RunOptions[DepsT]],
    ) -> Iterator[StateT]: ...
    @overload
    def stream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["events"],
        **options: Unpack[RunOptions[DepsT]],
    ) -> Iterator[Event]: ...
    @overload
    def stream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["custom"] | list[StreamMode] | tuple[StreamMode, ...],
        **options: Unpack[RunOptions[DepsT]],
    ) -> Iterator[tuple[str, Any]]: ...
    @langgraph_hints(2)
    def stream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: StreamMode | list[StreamMode] | tuple[StreamMode, ...] = "updates",
        **options: Unpack[RunOptions[DepsT]],
    ) -> Iterator[Any]:
        """Run like :meth:`invoke`, yielding as it goes.

        ``mode="updates"`` yields ``(node, update)`` per node run, ``"values"`` the whole
        state after each superstep, ``"events"`` the typed event records, ``"custom"``
        ``(node, value)`` per ``ctx.emit(value)`` (before that node's update); a list of
        modes yields ``(mode, item)`` pairs.
        """
        items: list[Any] = []
        picker = streams.Picker(mode, items.append)
        picker.rs, points = self._run("stream", input, options, picker)
        return streams.drained(points, items)

    @overload
    def astream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["updates"] = ...,
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]: ...
    @overload
    def astream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["values"],
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncIterator[StateT]: ...
    @overload
    def astream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["events"],
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncIterator[Event]: ...
    @overload
    def astream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: Literal["custom"] | list[StreamMode] | tuple[StreamMode, ...],
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncIterator[tuple[str, Any]]: ...
    @langgraph_hints(2)
    def astream(
        self,
        input: InputT | Resume[AnswerT] | Command[Any] | None,
        *,
        mode: StreamMode | list[StreamMode] | tuple[StreamMode, ...] = "updates",
        **options: Unpack[RunOptions[DepsT]],
    ) -> AsyncIterator[Any]:
        """Run like :meth:`ainvoke`, yielding like :meth:`stream`, live.

        The run is driven by a task of its own, so each item reaches the consumer as it
        happens: a node's ``ctx.emit`` tokens arrive while that node is still running. The
        input and ``mode`` are checked (and the run set up) at the call, like ``stream``.
        """
        queue: asyncio.Queue[Any] = asyncio.Queue()
        picker = streams.Picker(mode, queue.put_nowait)
        picker.rs, ending, hold = self._start("astream", input, options, picker)
        return _ends_when_dropped(
            streams.live(_awatched(run_async(picker.rs), ending), queue), hold
        )

    # ------------------------------------------------------------------ threads

    def submit(
        self,
        input: InputT | Resume[AnswerT] | None,
        *,
        thread_id: str,
        budget: Budget | None = None,
    ) -> int:
        """Queue a run of ``thread_id`` for a worker (``corral worker``); return its id.

        The queue lives in the checkpointer's database (``PostgresSaver``, or a
        ``SqliteSaver`` file for workers on one machine). ``Resume(value)`` answers the
        thread's interrupt; ``None`` continues it; the worker runs it under ``budget`` like
        ``invoke(..., budget=)``. See ``docs/scaling.md``.
        """
        from corral.workers.client import submit

        return submit(self, input, thread_id=thread_id, budget=budget)

    def wait(self, thread_id: str, timeout: float | None = None) -> Run[StateT]:
        """Return the :class:`Run` of the thread's newest queued run once a worker ended it.

        Raises:
            RunFailedError: the run failed in the worker.
            WaitTimeoutError: ``timeout`` seconds passed first.
        """
        from corral.workers.client import wait

        return wait(self, thread_id, timeout)

    @langgraph_hints(1)
    def get_state(
        self, thread_id: str, checkpoint_id: str | None = None, *, subgraphs: bool = False
    ) -> StateSnapshot:
        """Return the thread's state at its last checkpoint (or at ``checkpoint_id``).

        With ``subgraphs=True`` the snapshot's ``subgraphs`` maps the path of each child
        that is paused inside this run (``"review"``, and ``"outer/inner"`` when nested) to
        that child's own snapshot.

        Raises:
            CheckpointError: the graph has no checkpointer, or the thread is unknown.
        """
        saver = self._saver("get_state")
        return thread_state(self._settings.tables, saver, thread_id, checkpoint_id, subgraphs)

    @langgraph_hints(1)
    def history(self, thread_id: str) -> list[StateSnapshot]:
        """Return every checkpoint of the thread as a snapshot, newest first."""
        return threads.history(self._settings.tables, self._saver("history"), thread_id)

    @langgraph_hints(1)
    def update_state(
        self,
        thread_id: str,
        values: InputT,
        as_node: str | None = None,
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        """Write ``values`` into the thread as a new checkpoint (a fork); return its id.

        ``values`` is merged through the reducers like a node's update; without ``as_node``
        the thread's pending nodes and interrupts stay as they were. With ``as_node``, it
        is exactly as if that node had run and returned ``values`` (a dict, or a
        ``Command`` whose ``goto`` it follows; typed code casts it): the same engine code
        merges it, notes it at its joins and takes its routes, and the nodes that were
        waiting to run still run (see docs/persistence.md).
        The checkpoint it forks from (the last one, or ``checkpoint_id``) stays in history.
        """
        saver = self._saver("update_state")
        return threads.update_state(
            self._settings, saver, thread_id, values, as_node, checkpoint_id
        )

    # ------------------------------------------------------------------ set-up

    def _saver(self, what: str) -> Checkpointer:
        if self.checkpointer is None:
            msg = (
                f"{what}() needs a checkpointer; compile with "
                "g.compile(checkpointer=MemorySaver()) or SqliteSaver(path)"
            )
            raise CheckpointError(msg)
        return self.checkpointer

    def _run(
        self, method: str, input: Any, options: RunOptions[Any], picker: Picker | None = None
    ) -> tuple[RunState, Iterator[None]]:
        """Start the run that ``method`` asks for; return it and its driver's points, driven
        here (an async graph's on an event loop of their own)."""
        if self._settings.tables.has_async:
            _refuse_running_loop(method)
        rs, ending, hold = self._start(method, input, options, picker)
        if self._settings.tables.has_async:
            return rs, _ends_when_dropped(
                streams.in_new_loop(_awatched(run_async(rs), ending)), hold
            )
        return rs, _ends_when_dropped(_watched(run_sync(rs), ending), hold)

    def _start(
        self, method: str, input: Any, options: RunOptions[Any], picker: Picker | None
    ) -> tuple[RunState, AbstractContextManager[None], Hold | None]:
        """Return the run that ``method`` asks for (its events to ``picker`` too), what its
        driver runs in (its end ends the run's hold on its thread, and an error ends its
        spans, telemetry, first) and that hold."""
        unknown = [name for name in options if name not in RunOptions.__optional_keys__]
        if unknown:
            msg = f"{method}() got an unexpected keyword argument {unknown[0]!r}"
            raise TypeError(msg)
        tracer = RunTracer(self.spec) if self.telemetry else None
        # one live run holds a thread; a run refused here ends its spans all the same
        with _ending(tracer, None), holding(self.checkpointer, options.get("thread_id")) as hold:
            rs = threads.start(self._settings, input, options, picker, tracer)
        return rs, _ending(tracer, hold), hold


@contextmanager
def _ending(tracer: RunTracer | None, hold: Hold | None) -> Iterator[None]:
    """End the run's spans with an error that stops it, and its hold on its thread with it."""
    try:
        yield
    except BaseException as exc:
        if tracer is not None:
            tracer.fail(exc)
        raise
    finally:
        if hold is not None:
            hold.end()


def _ends_when_dropped(points: PointsT, hold: Hold | None) -> PointsT:
    """Return a run's ``points``; when they are dropped before the run began (a stream never
    iterated), the run's hold on its thread ends then, so the thread is free for the next
    run. A run that began ends its hold itself, when it ends or is closed; ending it twice
    is harmless."""
    if hold is not None:
        weakref.finalize(points, hold.end)
    return points


def _watched(points: Iterator[None], ending: AbstractContextManager[None]) -> Iterator[None]:
    """Yield a driver's points, the driver run in ``ending``."""
    with ending:
        yield from points


async def _awatched(
    points: AsyncIterator[None], ending: AbstractContextManager[None]
) -> AsyncIterator[None]:
    """Yield a driver's points like :func:`_watched`, from the async driver."""
    with ending:
        async for _ in points:
            yield


def _compiled(
    spec: GraphSpec,
    checkpointer: Checkpointer | None,
    max_steps: int,
    before: tuple[str, ...],
    after: tuple[str, ...],
    path: str = "",
) -> threads.Settings:
    """Return what a graph fixes for its runs: its tables, each subgraph node with its
    child compiled (the paths of ``before`` and ``after`` inside it become the child's;
    ``path``: the graph's own, ``research/`` for a child)."""
    tables = Tables(spec, path)
    for node_spec in spec.nodes:
        sub = node_spec.subgraph
        if sub is not None:
            prefix = f"{node_spec.name}/"
            inside = [tuple(p.removeprefix(prefix) for p in ps if p.startswith(prefix))
                      for ps in (before, after)]  # fmt: skip
            child = _compiled(
                sub.graph, checkpointer, sub.graph.max_steps, inside[0], inside[1], path + prefix
            )
            tables.nodes[node_spec.name].child = ChildGraph(node_spec.name, sub, child, tables)
    pauses = frozenset(before), frozenset(after)
    return threads.Settings(tables, checkpointer, max_steps, *pauses)


def _refuse_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    msg = (
        f"this graph has async nodes, and {what}() was called inside a running event loop; "
        f"use `await app.a{what}(...)` there instead"
    )
    raise RunningLoopError(msg, method=what)
