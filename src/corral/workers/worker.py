"""``Worker``: takes queued runs of one graph and runs them, holding each under a lease.

A worker runs ``concurrency`` runs at once, one per thread, plus a heartbeat thread that
renews the leases of the runs it holds every ``heartbeat_s``. A run is started from its
input, or, when an earlier worker already committed part of it, continued from the
thread's last checkpoint (see :mod:`corral.workers.queue`), so a committed node never
runs again.

What can go wrong, and what the worker does:

- Another worker took the run over (this worker's lease expired while it was frozen,
  stalled or cut off): its next write for the run is refused (``LeaseLostError``: every
  write of a run is fenced by its claim, see :mod:`corral.workers.queue`), and it drops
  the run (``lost``), whose new owner carries on. The node it had in flight ran, but
  nothing of it or after it is committed by this worker.
- Its commit is refused (``ConcurrentRunError``): another writer of the thread committed
  first (an ``invoke`` outside the queue). If the lease is still its own, it continues
  from the new last checkpoint; otherwise it drops the run.
- The database is unreachable (``CheckpointError``): it waits and tries again, continuing
  from the last checkpoint, for as long as its lease can still be valid; after that the
  run is left to whoever claims it next.
- The graph raises: the run is marked ``failed`` with a one-line reason (``app.wait``
  raises ``RunFailedError``). An interrupted run is marked ``interrupted`` and leaves the
  queue until ``app.submit(Resume(value), thread_id=...)``.
- A cancel was asked (the run's queue row, set by ``corral serve``): read after each
  superstep's checkpoint, it stops the run before its next node; the run is marked
  ``failed`` with ``RunCancelledError``. A write refused because the run's thread was
  deleted meanwhile ends it the same way.
- ``stop()`` (SIGTERM under ``corral worker``): it takes no new run, lets the runs it holds
  finish for up to ``grace_s``, then releases those still running back to the queue.

Every event is one JSON line on ``log`` (stderr by default): ``{"ts": ..., "worker": ...,
"event": "claimed", "run": 12, "thread": "t-1", "attempt": 1}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from corral.checkpoint.base import fenced
from corral.control import Command, Resume
from corral.errors import (
    CheckpointError,
    ConcurrentRunError,
    CorralError,
    LeaseLostError,
    RunCancelledError,
    SerializationError,
)
from corral.runtime.events import CheckpointWritten, Event, RunEnd
from corral.workers.client import queue_for
from corral.workers.queue import QueuedRun, RunQueue, load_input

if TYPE_CHECKING:
    from corral.runtime.app import CompiledGraph

__all__ = ["Worker", "apply_command"]


class Worker:
    """Runs the queued runs of ``app`` (whose checkpointer holds the queue).

    Args:
        app: the compiled graph, with a ``PostgresSaver`` or a ``SqliteSaver``.
        concurrency: runs at once (one thread each).
        lease_s: how long a claimed run stays this worker's without a heartbeat; a run
            whose worker died is taken over this long after its last heartbeat.
        heartbeat_s: how often leases are renewed (default ``lease_s / 3``).
        poll_s: how long an idle worker waits before asking the queue again.
        grace_s: after ``stop()``, how long runs may take to finish before release.
        log: where the JSON event lines go (``None``: nowhere).
        name: this worker's id in the queue and the log (default ``host:pid:random``).
        graphs: the graphs by the name runs are queued for (``corral serve``'s names) whose
            runs it takes, each run with its own graph (default: ``app`` under its
            ``spec.name``); runs queued with ``app.submit`` name no graph and any worker
            takes them, with its thread's graph.
        deps: handed to every run as ``invoke(..., deps=deps)``, so nodes and routers find
            it as ``ctx.deps`` (tool clients): one object for every run this worker makes,
            from all its threads at once, so it must be safe to share between threads.
    """

    def __init__(
        self,
        app: CompiledGraph[Any],
        *,
        concurrency: int = 1,
        lease_s: float = 30.0,
        heartbeat_s: float | None = None,
        poll_s: float = 0.5,
        grace_s: float = 30.0,
        log: TextIO | None = sys.stderr,
        name: str | None = None,
        deps: Any = None,
        graphs: Mapping[str, CompiledGraph[Any]] | None = None,
    ) -> None:
        if concurrency < 1:
            msg = f"concurrency={concurrency!r} must be at least 1"
            raise ValueError(msg)
        self.app = app
        self.queue: RunQueue = queue_for(app)
        self.concurrency = concurrency
        self.lease_s = lease_s
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else lease_s / 3
        self.poll_s = poll_s
        self.grace_s = grace_s
        self.log = log
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.deps = deps
        self.serializer = getattr(app.checkpointer, "serializer", None)
        named = {app.spec.name: app} if app.spec.name else {}
        self.graphs = dict(graphs) if graphs is not None else named
        self.finished = 0
        """Runs this worker marked done, interrupted or failed."""
        self._stop = threading.Event()
        self._held: set[int] = set()
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()

    # -- running -----------------------------------------------------------------------

    def run(self, *, until_idle: bool = False) -> int:
        """Work until :meth:`stop` (or, with ``until_idle``, until the queue has nothing
        ready); return how many runs this worker finished."""
        self._stop.clear()  # a worker may be run again after it stopped
        self.emit("started", concurrency=self.concurrency, lease_s=self.lease_s)
        beat = threading.Thread(target=self._heartbeat, name="corral-heartbeat", daemon=True)
        beat.start()
        pool = [
            threading.Thread(
                target=self._take, args=(until_idle,), name=f"corral-run-{i}", daemon=True
            )
            for i in range(self.concurrency)
        ]
        for thread in pool:
            thread.start()
        stopping_since: float | None = None
        while any(thread.is_alive() for thread in pool):
            for thread in pool:
                thread.join(timeout=0.05)
            if self._stop.is_set():
                stopping_since = stopping_since or time.monotonic()
                if time.monotonic() - stopping_since >= self.grace_s:
                    self._release_all()
                    break
        self._stop.set()
        beat.join(timeout=self.heartbeat_s + 1)
        self.emit("stopped", finished=self.finished)
        return self.finished

    def stop(self) -> None:
        """Take no new run; finish (or, after ``grace_s``, release) the ones held."""
        if not self._stop.is_set():
            self.emit("stopping", holding=sorted(self._held), grace_s=self.grace_s)
        self._stop.set()

    def emit(self, event: str, **fields: Any) -> None:
        """Write one structured line: ``{"ts", "worker", "event", ...fields}``."""
        if self.log is None:
            return
        record = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "worker": self.name}
        record["event"] = event
        line = json.dumps({**record, **fields}, default=str, ensure_ascii=False)
        # a closed stderr must not stop the work
        with self._log_lock, contextlib.suppress(OSError, ValueError):
            self.log.write(line + "\n")
            self.log.flush()

    # -- the threads -------------------------------------------------------------------

    def _take(self, until_idle: bool) -> None:
        pause = self.poll_s
        while not self._stop.is_set():
            try:
                run = self.queue.claim(self.name, self.lease_s, tuple(self.graphs))
            except CheckpointError as exc:
                self.emit("queue_error", error=str(exc))
                self._stop.wait(min(pause, 2.0))
                pause = min(pause * 2, 5.0)
                continue
            pause = self.poll_s
            if run is None:
                if until_idle:
                    return
                self._stop.wait(self.poll_s)
                continue
            with self._lock:
                self._held.add(run.id)
            try:
                self._execute(run)
            finally:
                with self._lock:
                    self._held.discard(run.id)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            with self._lock:
                held = sorted(self._held)
            if not held:
                continue
            try:
                kept = self.queue.renew(self.name, held, self.lease_s)
            except CheckpointError as exc:
                self.emit("heartbeat_error", error=str(exc))
                continue
            with self._lock:
                lost = sorted((set(held) - kept) & self._held)  # not those ended meanwhile
            for run_id in lost:
                self.emit("lease_lost", run=run_id)

    def _release_all(self) -> None:
        with self._lock:
            held = sorted(self._held)
        for run_id in held:
            try:
                released = self.queue.release(run_id, self.name)
            except CheckpointError as exc:
                self.emit("release_error", run=run_id, error=str(exc))
                continue
            self.emit("released", run=run_id, released=released)

    # -- one run -----------------------------------------------------------------------

    def _execute(self, run: QueuedRun) -> None:
        """Run (or continue) one claimed run until it ends, is lost, or fails."""
        self.emit("claimed", run=run.id, thread=run.thread_id, attempt=run.attempts)
        base = run.base
        retry_until = time.monotonic() + self.lease_s
        pause = 0.05
        while True:
            try:
                newest = self._newest(run.thread_id)
                if base is None:
                    # The base counts only once it is stored: a takeover reads it to tell
                    # a fresh start from a continuation, so a start the store did not take
                    # (an error) is asked again, never run on an unrecorded base.
                    if not self.queue.start(run.id, self.name, newest):
                        self.emit("lost", run=run.id, thread=run.thread_id)
                        return
                    base = newest
                fresh = newest == base
                value = load_input(run, self.serializer) if fresh else None
                with fenced(self.queue.fence(run, self.name), run=f"queued run {run.id}"):
                    status, steps = self.drive(run, value, run.fork if fresh else None)
            except LeaseLostError:
                self.emit("lost", run=run.id, thread=run.thread_id, attempt=run.attempts)
                return
            except ConcurrentRunError as exc:
                self.emit("conflict", run=run.id, thread=run.thread_id, newest=exc.newest)
                if not self._renewed(run.id):
                    self.emit("lost", run=run.id, thread=run.thread_id)
                    return
                self._stop.wait(self.poll_s)  # a run outside the queue may hold the thread
                continue
            except SerializationError as exc:
                self._finish(run, "failed", f"{type(exc).__name__}: {exc}")
                return
            except CheckpointError as exc:
                self.emit("store_error", run=run.id, thread=run.thread_id, error=str(exc))
                if self._cancel_asked(run):  # e.g. its thread was deleted meanwhile
                    why = f"run {run.id} was cancelled; its last write was refused: {exc}"
                    self._finish(run, "failed", f"{RunCancelledError.__name__}: {why}")
                    return
                if time.monotonic() > retry_until or self._stop.is_set():
                    self.emit("abandoned", run=run.id, thread=run.thread_id)
                    return
                self._stop.wait(pause)
                pause = min(pause * 2, 1.0)
                if self._renewed(run.id):
                    retry_until = time.monotonic() + self.lease_s
                continue
            except (CorralError, Exception) as exc:
                self._finish(run, "failed", f"{type(exc).__name__}: {exc}")
                return
            self._finish(
                run, "interrupted" if status == "interrupted" else "done", None, steps=steps
            )
            return

    def drive(self, run: QueuedRun, value: Any, fork: str | None) -> tuple[str, int]:
        """Run ``run`` with its graph (see :meth:`graph_of`) from ``value`` (``None``:
        continue its thread; ``fork``: from that checkpoint), stopping before its next node
        once a cancel was asked; return its status and node runs. A stateless served run's
        thread is deleted when the run ends (not when the store failed: it is tried again).

        Raises:
            RunCancelledError: a cancel was asked (the thread keeps its last checkpoint).
        """
        try:
            outcome = self.stream(run, value, fork, self.graph_of(run))
        except Exception as exc:
            if not isinstance(exc, CheckpointError) or isinstance(exc, SerializationError):
                self.ended(run)
            raise
        self.ended(run)
        return outcome

    def graph_of(self, run: QueuedRun) -> CompiledGraph[Any]:
        """Return the graph ``run`` was queued for, compiled with the served run's own
        ``interrupt_before``/``interrupt_after`` (``"*"``: every node); for a run of
        ``app.submit``, its thread's graph, else the worker's."""
        if not run.graph:
            saver: Any = self.app.checkpointer  # a SqliteSaver or PostgresSaver: it holds a queue
            info = saver.thread_info(run.thread_id)
            return self.graphs.get(info.graph if info and info.graph else "", self.app)
        app = self.graphs[run.graph]  # claim takes only runs of these graphs
        kwargs = run.fields.get("kwargs", {})
        before, after = (_nodes(app, kwargs.get(f"interrupt_{w}")) for w in ("before", "after"))
        if not before and not after:
            return app
        # app's own class: the runtime imports this package, not the other way
        return type(app)(
            app.spec,
            checkpointer=app.checkpointer,
            interrupt_before=(*app.interrupt_before, *before),
            interrupt_after=(*app.interrupt_after, *after),
            max_steps=app.max_steps,
        )

    def stream(
        self,
        run: QueuedRun,
        value: Any,
        fork: str | None,
        app: CompiledGraph[Any],
        on_event: Callable[[Event], None] | None = None,
    ) -> tuple[str, int]:
        """Drive ``app`` through ``run`` (see :meth:`drive`), each event to ``on_event``."""
        self.stop_if_cancelled(run)
        if isinstance(value, Command):
            value, fork = apply_command(app, run.thread_id, value, fork), None
        status, steps = "done", 0
        for event in app.stream(
            value,
            mode="events",
            thread_id=run.thread_id,
            checkpoint_id=fork,
            deps=self.deps,
            on_event=on_event,
            budget=run.budget,
        ):
            if isinstance(event, RunEnd):
                status, steps = event.status, event.steps
            elif isinstance(event, CheckpointWritten) and event.thread_id == run.thread_id:
                if event.status == "running":
                    self.stop_if_cancelled(run)
        return status, steps

    def ended(self, run: QueuedRun) -> None:
        """A served run ended: a stateless one's thread (checkpoints, record, runs) goes."""
        if run.fields.get("temporary"):
            self.queue.delete_thread(run.thread_id, self.app.checkpointer)

    def stop_if_cancelled(self, run: QueuedRun) -> None:
        """Raise ``RunCancelledError`` when a cancel of ``run`` was asked (in its queue row)."""
        if self._cancel_asked(run):
            msg = f"run {run.id} of thread {run.thread_id!r} was cancelled before its next node"
            raise RunCancelledError(msg, run_id=str(run.id))

    def _cancel_asked(self, run: QueuedRun) -> bool:
        try:
            return self.queue.cancel_asked(run.id) is not None
        except CheckpointError:
            return False  # the next write says whether the database is back

    def _finish(self, run: QueuedRun, status: str, error: str | None, **extra: Any) -> None:
        try:
            marked = self.queue.finish(run.id, self.name, status, error)
        except CheckpointError as exc:
            self.emit("store_error", run=run.id, thread=run.thread_id, error=str(exc))
            marked = False  # the lease lapses; whoever takes it over finds the run ended
        if marked:
            self.finished += 1
        fields = {"error": error} if error else {}
        self.emit(status, run=run.id, thread=run.thread_id, recorded=marked, **fields, **extra)

    def _newest(self, thread_id: str) -> str:
        saver: Any = self.app.checkpointer  # a SqliteSaver or PostgresSaver: it holds a queue
        return saver.newest_id(thread_id) or ""

    def _renewed(self, run_id: int) -> bool:
        try:
            return run_id in self.queue.renew(self.name, [run_id], self.lease_s)
        except CheckpointError:
            return False


def apply_command(
    app: CompiledGraph[Any], thread_id: str, command: Command[Any], fork: str | None = None
) -> Resume | None:
    """Write a ``Command``'s ``update`` and ``goto`` into the thread (a checkpoint after its
    last one, or after ``fork``); return what the run then continues with.

    ``update`` alone is merged (``update_state``: the pending nodes and interrupts stay);
    with ``goto`` it is as if the node that ran last had returned the ``Command``
    (``as_node``), so the engine takes that route only where that node declares it.
    """
    if command.goto is not None:
        last = app.checkpointer.chain(thread_id, fork)[-1] if app.checkpointer else None
        ran = [node for node, _ in last.writes if not node.startswith("__")] if last else []
        if not ran:
            msg = (
                f"command goto={command.goto!r} needs a node that ran on thread "
                f"{thread_id!r} to route from; start the thread with an input first"
            )
            raise CorralError(msg)
        update = Command(update=command.update, goto=command.goto)
        app.update_state(thread_id, update, ran[-1], checkpoint_id=fork)
    elif command.update is not None:
        app.update_state(thread_id, command.update, checkpoint_id=fork)
    return None if command.resume is None else Resume(command.resume)


def _nodes(app: CompiledGraph[Any], asked: Any) -> tuple[str, ...]:
    if asked in (None, []):
        return ()
    if asked == "*":
        return tuple(node.name for node in app.spec.nodes)
    return tuple(asked)
