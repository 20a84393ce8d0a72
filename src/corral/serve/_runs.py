"""Runs of the served graphs: created by the API, queued, run by durable workers.

A run created through the API is recorded (:mod:`corral.serve._store`), then queued with
``app.submit`` in the checkpointer's database, where the server's own :class:`Worker`
(``--workers N``) or ``corral worker`` processes on any machine take it. The server's
worker runs every served graph: its app is a :class:`Dispatcher`, whose ``invoke`` looks
up the run the queue handed it and runs it with that run's graph, publishing its events
live to the :class:`~corral.serve._hub.Hub` and stopping before the next node once a
cancel was asked. Everything a run does still goes through ``CompiledGraph.stream``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from corral.checkpoint.base import NewestId
from corral.control import Command, Resume
from corral.cost import Budget
from corral.errors import CheckpointError, RunCancelledError
from corral.runtime.app import CompiledGraph, Run
from corral.runtime.events import CheckpointWritten, Custom, Event, NodeEnd, Paused
from corral.serve._hub import Hub
from corral.serve._shapes import event_json, interrupts_json
from corral.serve._store import RunRecord, ServeStore

__all__ = ["Dispatcher", "Served", "newest", "run_input"]


class Served:
    """The served graphs by name, their shared database and the live events."""

    def __init__(
        self,
        graphs: dict[str, CompiledGraph[Any]],
        store: ServeStore,
        hub: Hub,
        *,
        deps: Any = None,
        descriptions: dict[str, str | None] | None = None,
    ) -> None:
        self.graphs = graphs
        self.store = store
        self.hub = hub
        self.deps = deps
        self.descriptions = descriptions or {}
        self.cancelled: set[str] = set()
        """Runs a cancel was asked for through this process (the store has them all)."""
        self._variants: dict[tuple[str, tuple[str, ...], tuple[str, ...]], CompiledGraph[Any]]
        self._variants = {}
        self._lock = threading.Lock()

    @property
    def any_app(self) -> CompiledGraph[Any]:
        """One of the served apps (they share a checkpointer and so a queue)."""
        return next(iter(self.graphs.values()))

    def start(
        self, thread_id: str, name: str, fields: dict[str, Any], *, temporary: bool = False
    ) -> RunRecord:
        """Record a run of graph ``name`` on the thread and queue it; return its record.

        ``fields`` are the run fields of :func:`corral.serve._requests.run_fields`.

        Raises:
            BusyThreadError: ``multitask_strategy="reject"`` and the thread is busy.
        """
        fields = dict(fields)
        run = RunRecord(
            run_id=str(uuid.uuid4()),
            thread_id=thread_id,
            assistant_id=name,
            queue_id=None,
            metadata=fields.pop("metadata", {}),
            kwargs=fields,
            multitask_strategy=fields.get("multitask_strategy", "enqueue"),
            temporary=temporary,
            started=0,
            cancel=None,
            created_at=time.time(),
            status="pending",
            error=None,
        )
        self.store.add_run(run)
        self.submit(run)
        return run

    def submit(self, record: RunRecord) -> int:
        """Queue a recorded run; note its queue id and return it."""
        app = self.graphs[record.assistant_id]
        queue_id = app.submit(queued_input(record), thread_id=record.thread_id)
        self.store.set_queue_id(record.run_id, queue_id)
        return queue_id

    def variant(self, record: RunRecord) -> CompiledGraph[Any]:
        """Return the run's graph, compiled with the run's own interrupt_before/after."""
        app = self.graphs[record.assistant_id]
        before = _nodes(app, record.kwargs.get("interrupt_before"))
        after = _nodes(app, record.kwargs.get("interrupt_after"))
        if not before and not after:
            return app
        key = (record.assistant_id, before, after)
        with self._lock:
            found = self._variants.get(key)
            if found is None:
                found = self._variants[key] = CompiledGraph(
                    app.spec,
                    checkpointer=app.checkpointer,
                    interrupt_before=(*app.interrupt_before, *before),
                    interrupt_after=(*app.interrupt_after, *after),
                    max_steps=app.max_steps,
                )
        return found

    # -- a worker runs a run -----------------------------------------------------------

    def execute(self, value: Any, thread_id: str) -> Run[Any]:
        """Run (or continue) the queued run the worker holds for ``thread_id``."""
        record = self.store.running_run(thread_id)
        deadline = time.monotonic() + 10
        while record is not None and record.queue_id is None and time.monotonic() < deadline:
            time.sleep(0.005)  # the API is noting the queue id it was just given
            record = self.store.running_run(thread_id)
        if record is not None and record.queue_id is None:
            # its server died between queueing it and noting where: this is that run
            self.store.adopt(thread_id, record.run_id)
            record = self.store.running_run(thread_id)
        if record is None or record.queue_id is None:
            # queued with app.submit by hand: run it as a worker would
            thread = self.store.get_thread(thread_id)
            graph = thread.graph if thread is not None and thread.graph else None
            app = self.graphs.get(graph or "", self.any_app)
            return app.invoke(value, thread_id=thread_id, deps=self.deps)
        app = self.variant(record)
        starts = self.store.note_started(record.run_id)
        command = record.kwargs.get("command") or {}
        if starts == 0 and ("update" in command or "goto" in command):
            value = run_input(record)  # only the first start applies the command
        # a fork (checkpoint_id) is made at the first start; a takeover continues it
        fork = record.kwargs.get("checkpoint_id") if starts == 0 else None
        self.hub.open(record.run_id)
        try:
            self._stream(app, record, value, fork)
        except CheckpointError:
            raise  # the worker tries again from the last checkpoint: the stream stays open
        except RunCancelledError:
            self._ended(record)
            raise
        except Exception as exc:
            self.hub.publish(
                record.run_id, "error", {"error": type(exc).__name__, "message": str(exc)}
            )
            self._ended(record)
            raise
        self._ended(record)
        snap = app.get_state(thread_id)
        return Run(
            snap.values,
            steps=snap.steps,
            supersteps=snap.supersteps,
            status=snap.status,
            interrupts=snap.interrupts,
            guards=snap.guards,
            thread_id=thread_id,
            checkpoint_id=snap.checkpoint_id,
        )

    def _stream(
        self, app: CompiledGraph[Any], record: RunRecord, value: Any, fork: str | None
    ) -> None:
        """Run the run, publishing its events; stop before the next node once cancelled."""
        publish = _Publisher(self.hub, record.run_id, app, record.thread_id)
        if self._stopping(record):
            msg = f"run {record.run_id!r} was cancelled before it started"
            raise RunCancelledError(msg, run_id=record.run_id)
        if not isinstance(value, dict) and newest(app, record.thread_id) is not None:
            publish.values(app.get_state(record.thread_id).values)
        for _ in app.stream(
            value,
            mode="values",
            thread_id=record.thread_id,
            checkpoint_id=fork,
            deps=self.deps,
            on_event=publish,
        ):
            if self._stopping(record):
                msg = f"run {record.run_id!r} was cancelled; the thread keeps its last checkpoint"
                raise RunCancelledError(msg, run_id=record.run_id)

    def _ended(self, record: RunRecord) -> None:
        """Close the run's channel; a stateless run's thread ends with it, and the record
        of a run whose thread was deleted goes."""
        self.hub.end(record.run_id)
        self.cancelled.discard(record.run_id)
        if record.temporary:
            self.store.delete_thread(record.thread_id)
        self.store.forget_run(record)

    def _stopping(self, record: RunRecord) -> bool:
        if record.run_id in self.cancelled:
            return True
        found = self.store.get_run(record.run_id)
        return found is None or found.cancel is not None


class _Publisher:
    """The ``on_event`` of a served run: each event becomes the stream events it makes."""

    def __init__(self, hub: Hub, run_id: str, app: CompiledGraph[Any], thread_id: str) -> None:
        self.hub = hub
        self.run_id = run_id
        self.app = app
        self.thread_id = thread_id

    def values(self, values: dict[str, Any]) -> None:
        self.hub.publish(self.run_id, "values", values)

    def __call__(self, event: Event) -> None:
        self.hub.publish(self.run_id, "events", event_json(event))
        if isinstance(event, Custom) and "/" not in event.node:
            self.hub.publish(self.run_id, "custom", event.value)
        elif isinstance(event, NodeEnd) and "/" not in event.node:
            update = dict(event.update) if event.update is not None else None
            self.hub.publish(self.run_id, "updates", {event.node: update})
        elif (
            isinstance(event, CheckpointWritten)
            and event.thread_id == self.thread_id
            and event.status != "interrupted"  # Paused sends the state with its question
        ):
            self.values(self.app.get_state(self.thread_id, event.checkpoint_id).values)
        elif isinstance(event, Paused):
            pending = interrupts_json(event.interrupts)
            self.hub.publish(self.run_id, "updates", {"__interrupt__": pending})
            state = self.app.get_state(self.thread_id).values
            self.values({**state, "__interrupt__": pending})


def newest(app: CompiledGraph[Any], thread_id: str) -> str | None:
    """Return the id of the thread's newest checkpoint, ``None`` before its first."""
    saver: object = app.checkpointer
    if isinstance(saver, NewestId):
        return saver.newest_id(thread_id)
    return None  # the server opens only SQLite and PostgreSQL savers, which answer this


def _nodes(app: CompiledGraph[Any], asked: Any) -> tuple[str, ...]:
    if asked in (None, []):
        return ()
    if asked == "*":
        return tuple(node.name for node in app.spec.nodes)
    return tuple(asked)


def run_input(record: RunRecord) -> Any:
    """Return what ``invoke`` gets for the run: its input, a ``Resume`` or a ``Command``."""
    command = record.kwargs.get("command")
    if command:
        if "update" in command or "goto" in command:
            return Command(
                update=command.get("update"),
                goto=command.get("goto"),
                resume=command.get("resume"),
            )
        return Resume(command.get("resume"))
    return record.kwargs.get("input")


def queued_input(record: RunRecord) -> Any:
    """Return what the queue carries: the input or a ``Resume`` (a ``Command`` that updates
    or moves stays in the run record, applied by the server's worker)."""
    value = run_input(record)
    return None if isinstance(value, Command) else value


class Dispatcher(CompiledGraph[Any]):
    """The app the server's :class:`~corral.workers.Worker` runs: every served graph.

    The queue holds the runs of every graph of the database; ``invoke`` hands each to
    :meth:`Served.execute`, which runs it with its own graph.
    """

    def __init__(self, served: Served) -> None:
        first = served.any_app
        super().__init__(first.spec, checkpointer=first.checkpointer)
        self._served = served

    def invoke(
        self,
        input: Any,
        *,
        thread_id: str | None = None,
        checkpoint_id: str | None = None,
        max_steps: int | None = None,
        deps: Any = None,
        on_event: Callable[[Event], None] | None = None,
        budget: Budget | None = None,
    ) -> Run[Any]:
        """Run the queued run of ``thread_id`` with its own graph (see :class:`Served`)."""
        assert thread_id is not None  # a worker always names the thread
        return self._served.execute(input, thread_id)
