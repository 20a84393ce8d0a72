"""``CompiledGraph``: a checked graph that can run, and ``Run``, what a run returns.

``invoke``/``stream`` drive the synchronous loop and ``ainvoke``/``astream`` the async one
(see :mod:`corral.runtime.engine`); a graph with an async node or router always runs on the
async loop (``invoke`` starts a fresh event loop for it). Threads, resumes, interrupts and
forks are set up here and saved through :mod:`corral.runtime.persist`.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar, overload

from corral.checkpoint.base import Checkpoint, Checkpointer
from corral.control import Command, Resume
from corral.errors import CheckpointError, CorralError, GraphError, InvalidUpdateError
from corral.runtime import persist
from corral.runtime.engine import (
    NO_ARG,
    Execution,
    Loop,
    Task,
    next_tasks,
    pause_run,
    route_async,
    route_sync,
    router_targets,
    run_async,
    run_sync,
    take_routes,
)
from corral.runtime.events import (
    Event,
    Interrupt,
    NodeEnd,
    StateSnapshot,
    SuperstepEnd,
    TraceRecord,
)
from corral.runtime.state import apply_writes, is_flat, thaw
from corral.runtime.tables import Node, build_tables
from corral.spec import GraphSpec

__all__ = ["CompiledGraph", "Run"]

StateT = TypeVar("StateT")
StreamMode = Literal["updates", "values", "events"]


class Run:
    """The outcome of ``invoke``: the state reached and how the run got there."""

    __slots__ = (
        "_raw_trace",
        "_trace",
        "checkpoint_id",
        "guards",
        "interrupts",
        "state",
        "status",
        "steps",
        "supersteps",
        "thread_id",
    )

    def __init__(
        self,
        state: dict[str, Any],
        *,
        steps: int = 0,
        supersteps: int = 0,
        status: str = "done",
        interrupts: Sequence[Interrupt] = (),
        guards: Mapping[tuple[str, str], int] | None = None,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        trace: Sequence[tuple[int, str, Mapping[str, Any] | None, float]] = (),
    ) -> None:
        self.state = state
        """The state at the end of the run (or at the pause)."""
        self.steps = steps
        """Node runs in this run, across resumes."""
        self.supersteps = supersteps
        self.status = status
        """``"done"`` or ``"interrupted"``."""
        self.interrupts: list[Interrupt] = list(interrupts)
        """The pauses waiting for an answer (``id``, ``node``, ``value``)."""
        self.guards: dict[tuple[str, str], int] = dict(guards or {})
        """How often each guarded route was taken, keyed ``(source, target)``."""
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id
        """The last checkpoint written, when the graph has a checkpointer."""
        self._raw_trace = trace
        self._trace: list[TraceRecord] | None = None

    @property
    def trace(self) -> list[TraceRecord]:
        """Return one record per node run of this call: step, node, update, seconds."""
        if self._trace is None:
            self._trace = [TraceRecord(*item) for item in self._raw_trace]
        return self._trace

    def __repr__(self) -> str:
        return (
            f"Run(status={self.status!r}, steps={self.steps}, supersteps={self.supersteps}, "
            f"thread_id={self.thread_id!r}, state={self.state!r})"
        )


class CompiledGraph(Generic[StateT]):
    """A checked graph, ready to run.

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
    ) -> None:
        self.spec = spec
        self.checkpointer = checkpointer
        self.interrupt_before = tuple(interrupt_before)
        self.interrupt_after = tuple(interrupt_after)
        self.max_steps = _check_cap(max_steps) if max_steps is not None else spec.max_steps
        self._tables = build_tables(spec)
        self._loop = Loop(self._tables, frozenset(interrupt_before), frozenset(interrupt_after))

    def __repr__(self) -> str:
        label = f" {self.spec.name!r}" if self.spec.name else ""
        return f"<CompiledGraph{label} nodes={list(self._tables.nodes)}>"

    # ------------------------------------------------------------------ running

    def invoke(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Run:
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

        Raises:
            StepLimitError, NodeCapError, GuardExhaustedError: a bound stopped the run.
            NodeError: a node or router raised; the original is its ``__cause__``.
            InvalidUpdateError, RouteError: a node or router returned something invalid.
        """
        if self._tables.has_async:
            _refuse_running_loop("invoke")
            return asyncio.run(
                self.ainvoke(
                    input,
                    thread_id=thread_id,
                    checkpoint_id=checkpoint_id,
                    max_steps=max_steps,
                    deps=deps,
                    on_event=on_event,
                )
            )
        ex = self._prepare(input, thread_id, checkpoint_id, max_steps, deps, on_event, None)
        for _ in run_sync(ex, self._loop):
            pass
        return _run_of(ex)

    async def ainvoke(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Run:
        """Run like :meth:`invoke`, running the async nodes of a superstep concurrently."""
        ex = self._prepare(input, thread_id, checkpoint_id, max_steps, deps, on_event, None)
        async for _ in run_async(ex, self._loop):
            pass
        return _run_of(ex)

    @overload
    def stream(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        mode: Literal["updates"] = ...,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]: ...
    @overload
    def stream(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        mode: Literal["values"],
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Iterator[dict[str, Any]]: ...
    @overload
    def stream(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        mode: Literal["events"],
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Iterator[Event]: ...
    def stream(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        mode: StreamMode = "updates",
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> Iterator[Any]:
        """Run like :meth:`invoke`, yielding as it goes.

        ``mode="updates"`` yields ``(node, update)`` per node run, ``"values"`` the whole
        state after each superstep, ``"events"`` the typed event records.
        """
        _check_mode(mode)
        if self._tables.has_async:
            _refuse_running_loop("stream")
            return self._stream_async_in_loop(
                input, mode, thread_id, checkpoint_id, max_steps, deps, on_event
            )
        return self._stream_sync(input, mode, thread_id, checkpoint_id, max_steps, deps, on_event)

    def _stream_sync(
        self,
        input: Any,
        mode: StreamMode,
        thread_id: str | None,
        checkpoint_id: str | None,
        max_steps: int | None,
        deps: Any,
        on_event: Callable[[Event], None] | None,
    ) -> Iterator[Any]:
        buffer: list[Event] = []
        ex = self._prepare(input, thread_id, checkpoint_id, max_steps, deps, on_event, buffer)
        yield from _select(ex, run_sync(ex, self._loop), mode)

    def _stream_async_in_loop(
        self,
        input: Any,
        mode: StreamMode,
        thread_id: str | None,
        checkpoint_id: str | None,
        max_steps: int | None,
        deps: Any,
        on_event: Callable[[Event], None] | None,
    ) -> Iterator[Any]:
        loop = asyncio.new_event_loop()
        try:
            agen = self.astream(
                input,
                mode=mode,
                thread_id=thread_id,
                checkpoint_id=checkpoint_id,
                max_steps=max_steps,
                deps=deps,
                on_event=on_event,
            )
            while True:
                try:
                    item = loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    break
                yield item
        finally:
            loop.close()

    async def astream(
        self,
        input: Mapping[str, Any] | Resume | Command[Any] | None,
        *,
        mode: StreamMode = "updates",
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> AsyncIterator[Any]:
        """Run like :meth:`ainvoke`, yielding like :meth:`stream`."""
        _check_mode(mode)
        buffer: list[Event] = []
        ex = self._prepare(input, thread_id, checkpoint_id, max_steps, deps, on_event, buffer)
        async for event in run_async(ex, self._loop):
            item = _pick(ex, event, mode)
            if item is not _SKIP:
                yield item

    # ------------------------------------------------------------------ threads

    def submit(self, input: Mapping[str, Any] | Resume | None, *, thread_id: str) -> int:
        """Queue a run of ``thread_id`` for a worker (``corral worker``); return its id.

        The queue lives in the checkpointer's database (``PostgresSaver``, or a
        ``SqliteSaver`` file for workers on one machine). ``Resume(value)`` answers the
        thread's interrupt; ``None`` continues it. See ``docs/scaling.md``.
        """
        from corral.workers import submit

        return submit(self, input, thread_id=thread_id)

    def wait(self, thread_id: str, timeout: float | None = None) -> Run:
        """Return the :class:`Run` of the thread's newest queued run once a worker ended it.

        Raises:
            RunFailedError: the run failed in the worker.
            WaitTimeoutError: ``timeout`` seconds passed first.
        """
        from corral.workers import wait

        return wait(self, thread_id, timeout)

    def get_state(self, thread_id: str, checkpoint_id: str | None = None) -> StateSnapshot:
        """Return the thread's state at its last checkpoint (or at ``checkpoint_id``).

        Raises:
            CheckpointError: the graph has no checkpointer, or the thread is unknown.
        """
        saver = self._saver("get_state")
        chain = saver.chain(thread_id, checkpoint_id)
        if not chain:
            raise _unknown_thread(thread_id, checkpoint_id)
        values = persist.rebuild(self._tables, chain)
        return persist.snapshot_of(values, chain[-1])

    def history(self, thread_id: str) -> list[StateSnapshot]:
        """Return every checkpoint of the thread as a snapshot, newest first."""
        saver = self._saver("history")
        states: dict[str, dict[str, Any]] = {}
        out: list[StateSnapshot] = []
        for checkpoint in saver.checkpoints(thread_id):
            if checkpoint.snapshot is not None:
                values = dict(checkpoint.snapshot)
            else:
                parent = states.get(checkpoint.parent_id or "")
                if parent is None:
                    chain = saver.chain(thread_id, checkpoint.checkpoint_id)
                    values = persist.rebuild(self._tables, chain)
                else:
                    values = apply_writes(
                        parent,
                        [(n, u) for n, u in checkpoint.writes],
                        self._tables.reducers,
                        self._tables.empties,
                    )
            states[checkpoint.checkpoint_id] = values
            out.append(persist.snapshot_of(values, checkpoint))
        out.reverse()
        return out

    def update_state(
        self,
        thread_id: str,
        values: Mapping[str, Any],
        as_node: str | None = None,
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        """Write ``values`` into the thread as a new checkpoint (a fork); return its id.

        ``values`` is merged through the reducers like a node's update. With ``as_node``,
        the update counts as that node's, and the next nodes are that node's routes;
        without it, the thread's pending nodes and interrupts stay as they were. The
        checkpoint it forks from (the last one, or ``checkpoint_id``) stays in history.
        """
        saver = self._saver("update_state")
        chain = saver.chain(thread_id, checkpoint_id)
        if not chain:
            raise _unknown_thread(thread_id, checkpoint_id)
        base = chain[-1]
        state = persist.rebuild(self._tables, chain)
        writer = as_node if as_node is not None else "__update__"
        node: Node | None = None
        if as_node is not None:
            node = self._tables.nodes.get(as_node)
            if node is None:
                msg = f"as_node={as_node!r} is not a node; name one of {list(self._tables.nodes)}"
                raise GraphError(msg)
        update = _check_input(self._tables, values, writer)
        ex = self._execution(None, thread_id, deps=None, emit=None)
        persist.load(ex, self._tables, base, saver)
        ex.values = apply_writes(
            state, [(writer, update)], self._tables.reducers, self._tables.empties
        )
        meta = base.meta
        pauses = [dict(p) for p in meta.get("interrupts", [])]
        extra: dict[str, Any] = {}
        status = str(meta.get("status", "running"))
        if node is not None:
            plain: list[Node] = []
            sends: list[Task] = []
            if node.then is not None:
                take_routes(ex, node, node.then, "then", plain, sends)
            elif node.router is not None:
                raw = (
                    asyncio.run(route_async(ex, node, node.router))
                    if node.router.is_async
                    else _route_now(ex, node)
                )
                take_routes(
                    ex, node, router_targets(node, node.router, raw), "router", plain, sends
                )
            ex.tasks = next_tasks(ex, plain, sends)
            ex.answers = {}
            pauses = []
            status = "running" if ex.tasks else "done"
        else:
            if ex.done:  # finished siblings: kept in meta, or recorded after a crash
                extra["done"] = [persist.result_json(r) for _, r in sorted(ex.done.items())]
            if "reroute" in meta:
                extra["reroute"] = meta["reroute"]
        saver_ = persist.ThreadSaver(
            saver,
            self._tables,
            thread_id,
            parent_id=base.checkpoint_id,
            seq=int(meta.get("seq", 0)),
            since_snapshot=0,
            run=int(meta.get("run", 1)),
            force_snapshot=True,
        )
        saver_.put(ex, [(writer, update)], status, "update", pauses, extra)
        assert ex.checkpoint_id is not None
        return ex.checkpoint_id

    # ------------------------------------------------------------------ set-up

    def _saver(self, what: str) -> Checkpointer:
        if self.checkpointer is None:
            msg = (
                f"{what}() needs a checkpointer; compile with "
                "g.compile(checkpointer=MemorySaver()) or SqliteSaver(path)"
            )
            raise CheckpointError(msg)
        return self.checkpointer

    def _execution(
        self,
        max_steps: int | None,
        thread_id: str | None,
        *,
        deps: Any,
        emit: Callable[[Event], None] | None,
    ) -> Execution:
        cap = _check_cap(max_steps) if max_steps is not None else self.max_steps
        ex = Execution(self._tables, max_steps=cap, deps=deps, thread_id=thread_id)
        ex.emit = emit
        return ex

    def _prepare(
        self,
        input: Any,
        thread_id: str | None,
        checkpoint_id: str | None,
        max_steps: int | None,
        deps: Any,
        on_event: Callable[[Event], None] | None,
        buffer: list[Event] | None,
    ) -> Execution:
        ex = self._prepare_values(
            input, thread_id, checkpoint_id, max_steps, deps, on_event, buffer
        )
        ex.flat = is_flat(ex.values)
        return ex

    def _prepare_values(
        self,
        input: Any,
        thread_id: str | None,
        checkpoint_id: str | None,
        max_steps: int | None,
        deps: Any,
        on_event: Callable[[Event], None] | None,
        buffer: list[Event] | None,
    ) -> Execution:
        emit = _emitter(on_event, buffer)
        resume: Resume | None = None
        if isinstance(input, Command) and input.resume is not None:
            resume = Resume(input.resume)
        elif isinstance(input, Resume):
            resume = input
        continuing = input is None or resume is not None
        saver = self.checkpointer
        if saver is None:
            if continuing or checkpoint_id is not None:
                what = "Resume(...)" if resume is not None else "invoke(None, ...)"
                msg = (
                    f"{what} continues a saved thread and needs a checkpointer; compile with "
                    "g.compile(checkpointer=MemorySaver()) and pass thread_id="
                )
                raise CorralError(msg)
            ex = self._execution(max_steps, thread_id, deps=deps, emit=emit)
            ex.buffer = buffer
            ex.values = self._start_values({}, input)
            ex.tasks = self._start_tasks()
            return ex
        if thread_id is None:
            if continuing:
                msg = "invoke(None) or Resume(...) needs the thread_id of the run to continue"
                raise CorralError(msg)
            thread_id = uuid.uuid4().hex
            chain: list[Checkpoint] = []
        else:
            chain = saver.chain(thread_id, checkpoint_id)
            if checkpoint_id is not None and not chain:
                raise _unknown_thread(thread_id, checkpoint_id)
        ex = self._execution(max_steps, thread_id, deps=deps, emit=emit)
        ex.buffer = buffer
        forked = checkpoint_id is not None and _is_fork(saver, thread_id, checkpoint_id)
        if continuing:
            if not chain:
                raise _unknown_thread(thread_id, None)
            last = chain[-1]
            ex.values = persist.rebuild(self._tables, chain)
            persist.load(ex, self._tables, last, saver)
            ex.saver = persist.ThreadSaver(
                saver,
                self._tables,
                thread_id,
                parent_id=last.checkpoint_id,
                seq=int(last.meta.get("seq", 0)),
                since_snapshot=int(last.meta.get("since_snapshot", 0)),
                run=int(last.meta.get("run", 1)),
                force_snapshot=forked,
            )
            ex.saver.last_status = str(last.meta.get("status", ""))
            self._continue(ex, last, resume)
            return ex
        base = persist.rebuild(self._tables, chain) if chain else {}
        last_meta = chain[-1].meta if chain else {}
        ex.values = self._start_values(base, input)
        ex.tasks = self._start_tasks()
        saver_ = persist.ThreadSaver(
            saver,
            self._tables,
            thread_id,
            parent_id=chain[-1].checkpoint_id if chain else None,
            seq=int(last_meta.get("seq", 0)),
            since_snapshot=int(last_meta.get("since_snapshot", 0)),
            run=int(last_meta.get("run", 0)) + 1,
            force_snapshot=True,  # the first checkpoint of every run has a snapshot
        )
        ex.saver = saver_
        # The input checkpoint carries a snapshot, so the reducer keys that started empty
        # need no write of their own.
        writes: list[tuple[str, Mapping[str, Any]]] = [("__input__", dict(input))]
        pauses = [
            {"task": i, "node": node.name, "value": None, "when": "before"}
            for i, (node, _) in enumerate(ex.tasks)
            if node.name in self._loop.before
        ]
        saver_._ids(ex, pauses)
        status = "interrupted" if pauses else "running"
        saver_.put(ex, writes, status, "input", pauses)
        if pauses:
            pause_run(ex, pauses)
        return ex

    def _continue(self, ex: Execution, last: Checkpoint, resume: Resume | None) -> None:
        meta = last.meta
        status = meta.get("status")
        pending = [dict(p) for p in meta.get("interrupts", [])]
        if status == "done" and not ex.tasks:
            ex.status = "done"
            if resume is not None:
                msg = (
                    f"thread {last.thread_id!r} finished and is not waiting for an answer; "
                    "start a new run with invoke(input, thread_id=...)"
                )
                raise CorralError(msg)
            return
        if resume is None or not pending:
            if resume is not None:
                msg = (
                    f"thread {last.thread_id!r} is not waiting for an answer (status "
                    f"{status!r}); continue it with invoke(None, thread_id=...)"
                )
                raise CorralError(msg)
            return
        during = [p for p in pending if p.get("when") == "during"]
        answers = _match_answers(last.thread_id, during, resume.value)
        for pause in during:
            if pause["id"] in answers:
                ex.answers.setdefault(int(pause["task"]), []).append(answers[pause["id"]])

    def _start_values(self, base: Mapping[str, Any], input: Any) -> dict[str, Any]:
        update = _check_input(self._tables, input, "__input__")
        values = dict(base)
        for key, empty in self._tables.empties.items():
            if key not in values:
                values[key] = copy.copy(empty)
        return apply_writes(
            values, [("__input__", update)], self._tables.reducers, self._tables.empties
        )

    def _start_tasks(self) -> list[Task]:
        nodes = self._tables.nodes
        return [(nodes[name], NO_ARG) for name in self._tables.starts]


_SKIP: Any = object()


def _pick(ex: Execution, event: Event, mode: StreamMode) -> Any:
    if mode == "events":
        return event
    if mode == "updates":
        if isinstance(event, NodeEnd):
            return (event.node, dict(event.update) if event.update is not None else {})
        return _SKIP
    if isinstance(event, SuperstepEnd):
        return thaw(ex.values)
    return _SKIP


def _select(ex: Execution, events: Iterator[Event], mode: StreamMode) -> Iterator[Any]:
    for event in events:
        item = _pick(ex, event, mode)
        if item is not _SKIP:
            yield item


def _emitter(
    on_event: Callable[[Event], None] | None, buffer: list[Event] | None
) -> Callable[[Event], None] | None:
    if on_event is not None and buffer is not None:
        keep = buffer.append

        def both(event: Event) -> None:
            keep(event)
            on_event(event)

        return both
    if on_event is not None:
        return on_event
    if buffer is not None:
        return buffer.append
    return None


def _run_of(ex: Execution) -> Run:
    return Run(
        ex.values,
        steps=ex.steps,
        supersteps=ex.supersteps,
        status=ex.status,
        interrupts=ex.interrupts,
        guards=ex.guards,
        thread_id=ex.thread_id,
        checkpoint_id=ex.checkpoint_id,
        trace=ex.trace,
    )


def _route_now(ex: Execution, node: Node) -> Any:
    assert node.router is not None
    return route_sync(ex, node, node.router)


def _check_cap(max_steps: Any) -> int:
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        msg = f"max_steps={max_steps!r} must be a whole number of node runs, 1 or more"
        raise GraphError(msg)
    return max_steps


def _check_mode(mode: str) -> None:
    if mode not in ("updates", "values", "events"):
        msg = f"stream mode {mode!r} is not one of 'updates', 'values', 'events'"
        raise CorralError(msg)


def _check_input(tables: Any, input: Any, writer: str) -> dict[str, Any]:
    what = "the input" if writer == "__input__" else "the update"
    if not isinstance(input, Mapping):
        msg = (
            f"{what} is {type(input).__name__} {input!r:.60}; pass a dict of state keys "
            "(or None / Resume(...) to continue a thread)"
        )
        raise InvalidUpdateError(msg, node=writer)
    for key in input:
        if key not in tables.keyset:
            msg = (
                f"{what} has key {key!r}, which is not in the state schema "
                f"(keys: {sorted(tables.keyset)}); remove it or add it to the schema"
            )
            raise InvalidUpdateError(msg, node=writer, key=key if isinstance(key, str) else None)
    return dict(input)


def _match_answers(thread_id: str, during: list[dict[str, Any]], value: Any) -> dict[str, Any]:
    ids = [p["id"] for p in during]
    if isinstance(value, Mapping) and value and all(k in ids for k in value):
        return dict(value)
    if len(ids) <= 1:
        return dict.fromkeys(ids, value)
    msg = (
        f"thread {thread_id!r} has {len(ids)} pending interrupts ({ids}); answer each with "
        "Resume({interrupt_id: value, ...})"
    )
    raise CorralError(msg)


def _is_fork(saver: Checkpointer, thread_id: str, checkpoint_id: str) -> bool:
    latest = saver.chain(thread_id)
    return not latest or latest[-1].checkpoint_id != checkpoint_id


def _unknown_thread(thread_id: str, checkpoint_id: str | None) -> CheckpointError:
    if checkpoint_id is not None:
        msg = (
            f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; pick one from "
            "app.history(thread_id)"
        )
    else:
        msg = (
            f"thread {thread_id!r} has no checkpoint to continue from; start it with "
            f"invoke(input, thread_id={thread_id!r})"
        )
    return CheckpointError(msg)


def _refuse_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    msg = (
        f"this graph has async nodes, and {what}() was called inside a running event loop; "
        f"use `await app.a{what}(...)` there instead"
    )
    raise CorralError(msg)
