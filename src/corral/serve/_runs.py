"""Runs of the served graphs: created by the API, queued, run by durable workers.

A run created through the API is one row of the queue (:mod:`corral.workers.served`) in
the checkpointer's database, where the server's own :class:`ServeWorker` (``--workers
N``) or ``corral worker`` processes on any machine take it. The server's worker runs every
served graph: it runs each run with that run's graph, publishing its events live to the
:class:`~corral.serve._hub.Hub`; any worker stops a run before its next node once a
cancel was asked. Everything a run does still goes through ``CompiledGraph.stream``.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from corral.control import Command, Resume
from corral.errors import CheckpointError, CorralError, RunCancelledError
from corral.runtime.app import CompiledGraph
from corral.runtime.events import CheckpointWritten, Custom, Event, NodeEnd, Paused
from corral.serve._hub import Hub
from corral.serve._requests import dumps
from corral.serve._shapes import event_json, interrupts_json
from corral.workers import Worker, queue_for
from corral.workers.queue import QueuedRun, dump_command, dump_input

if TYPE_CHECKING:
    from corral.checkpoint.postgres import PostgresSaver
    from corral.checkpoint.sqlite import SqliteSaver

__all__ = ["ServeWorker", "Served", "database_of", "run_input"]


class Served:
    """The served graphs by name, their shared database and the live events."""

    def __init__(
        self,
        graphs: dict[str, CompiledGraph[Any]],
        hub: Hub,
        *,
        deps: Any = None,
    ) -> None:
        self.graphs = graphs
        self.hub = hub
        self.deps = deps
        self.saver = database_of(self.any_app)
        self.worker_name: str | None = None
        """The name of this process's worker in the queue (``None``: it runs none)."""
        self.runs = queue_for(self.any_app)

    @property
    def any_app(self) -> CompiledGraph[Any]:
        """One of the served apps (they share a checkpointer and so a queue)."""
        return next(iter(self.graphs.values()))

    def start(
        self, thread_id: str, name: str, fields: dict[str, Any], *, temporary: bool = False
    ) -> QueuedRun:
        """Queue a run of graph ``name`` on the thread; return it. The thread belongs to
        the graph of its first run (kept in its metadata too, as LangGraph's server does).

        ``fields`` are the run fields of :func:`corral.serve._requests.run_fields`.

        Raises:
            BusyThreadError: ``multitask_strategy="reject"`` and the thread is busy.
        """
        kwargs = dict(fields)
        request = {"metadata": kwargs.pop("metadata", {}), "budget": kwargs.pop("budget", None)}
        request["kwargs"] = kwargs
        request["temporary"] = temporary
        value = run_input(kwargs)
        serializer = getattr(self.saver, "serializer", None)
        command = dump_command(value, serializer) if isinstance(value, Command) else None
        input, resume = dump_input(None if command else value, serializer)
        fork = kwargs.get("checkpoint_id")
        run = QueuedRun(0, thread_id, input, resume, None, 0, name, command, fork, dumps(request))
        run = dataclasses.replace(run, uuid=str(uuid.uuid4()), created_at=time.time())
        queue_id = self.runs.add(run, reject=kwargs.get("multitask_strategy") == "reject")
        graph = {"graph_id": name, "assistant_id": name}
        self.saver.update_thread_info(thread_id, graph, graph=name)
        return dataclasses.replace(run, id=queue_id)


class ServeWorker(Worker):
    """The server's worker: runs the queued runs of every served graph, each with its own
    graph, publishing their events live to the hub."""

    def __init__(self, served: Served, **options: Any) -> None:
        super().__init__(served.any_app, deps=served.deps, graphs=served.graphs, **options)
        self.served = served

    def stream(
        self,
        run: QueuedRun,
        value: Any,
        fork: str | None,
        app: CompiledGraph[Any],
        on_event: Callable[[Event], None] | None = None,
    ) -> tuple[str, int]:
        """Run the queued run (see :meth:`Worker.stream`), publishing a served run's events."""
        if not run.uuid:  # queued with app.submit by hand: nobody listens
            return super().stream(run, value, fork, app)
        hub = self.served.hub
        publish = _Publisher(hub, run.uuid, app, run.thread_id)
        hub.open(run.uuid)
        try:
            self.stop_if_cancelled(run)
            if not isinstance(value, dict) and self.served.saver.newest_id(run.thread_id):
                publish.values(app.get_state(run.thread_id).values)
            return super().stream(run, value, fork, app, publish)
        except (CheckpointError, RunCancelledError):
            raise  # a store error is tried again from the last checkpoint
        except Exception as exc:
            hub.publish(run.uuid, "error", {"error": type(exc).__name__, "message": str(exc)})
            raise

    def ended(self, run: QueuedRun) -> None:
        """Close the run's channel; a stateless run's thread ends with it."""
        if run.uuid:
            self.served.hub.end(run.uuid)
        super().ended(run)


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


def run_input(kwargs: dict[str, Any]) -> Any:
    """Return what ``invoke`` gets for the run: its input, a ``Resume`` or a ``Command``."""
    command = kwargs.get("command")
    if not command:
        return kwargs.get("input")
    if "update" in command or "goto" in command:
        return Command(**command)  # its keys were checked: resume, update, goto
    return Resume(command.get("resume"))


def database_of(app: CompiledGraph[Any]) -> SqliteSaver | PostgresSaver:
    """Return the checkpointer of ``app``: the database the server keeps its runs in.

    Raises:
        CorralError: it keeps none (memory), or the database has the tables of a
            pre-release ``corral serve``.
    """
    queue: Any = queue_for(app)  # refuses a checkpointer that keeps no database
    try:
        with queue.transaction("read") as db:
            db.execute("SELECT 1 FROM corral_serve_runs WHERE 1 = 0")
    except CheckpointError:  # no such table: the database is of this corral
        saver: SqliteSaver | PostgresSaver = app.checkpointer  # type: ignore[assignment]
        return saver
    msg = (
        f"{queue.where!r} holds the tables corral_serve_threads and corral_serve_runs of a "
        "pre-release corral serve, which kept threads and runs apart from the checkpoints; "
        "this corral keeps them in corral_threads and corral_runs. Finish its runs with the "
        "corral that made them, then DROP TABLE corral_serve_threads; DROP TABLE corral_serve_runs "
        "(the checkpoints stay; the threads' metadata and run records go), or serve "
        "another database"
    )
    raise CorralError(msg)
