"""The client side of the run queue: ``submit`` a run, ``wait`` for it to end.

``CompiledGraph.submit``/``wait`` call these; they need of a graph only its checkpointer
and ``get_state`` (:class:`QueuedApp`), so this module never imports the app's, and the
graph's own module can call it without a circle of imports.
"""

from __future__ import annotations

import json
import time
import weakref
from typing import Any, Protocol

from corral.checkpoint.base import check_thread_id
from corral.checkpoint.postgres import PostgresSaver
from corral.checkpoint.sqlite import SqliteSaver
from corral.cost import Budget, require
from corral.errors import CheckpointError, CorralError, RunFailedError, WaitTimeoutError
from corral.runtime.events import StateSnapshot
from corral.runtime.run import Run
from corral.workers.queue import RunQueue, dump_input


class QueuedApp(Protocol):
    """What the queue's client needs of a compiled graph."""

    @property
    def checkpointer(self) -> Any: ...

    def get_state(self, thread_id: str) -> StateSnapshot: ...


_UNREACHABLE_S = 30.0
"""How long ``wait`` keeps asking a database that does not answer before it gives up."""

_QUEUES: weakref.WeakKeyDictionary[Any, RunQueue] = weakref.WeakKeyDictionary()


def queue_for(app: QueuedApp) -> RunQueue:
    """Return the run queue in the database of ``app``'s checkpointer.

    Raises:
        CorralError: the checkpointer keeps no queue (memory, a store of your own).
    """
    saver = app.checkpointer
    known = _QUEUES.get(saver) if saver is not None else None
    if known is not None:
        return known
    queue: RunQueue
    if isinstance(saver, PostgresSaver):
        from corral.workers._postgres import PostgresQueue

        queue = PostgresQueue(saver.pool, saver.where)
    elif isinstance(saver, SqliteSaver) and saver.path != ":memory:":
        from corral.workers._sqlite import SqliteQueue

        queue = SqliteQueue(saver.path, saver.timeout_s)
    else:
        msg = (
            f"submit(), wait() and corral serve queue runs in the checkpointer's database, and "
            f"{saver!r} has none; compile with checkpointer=PostgresSaver(url) or SqliteSaver(path)"
        )
        raise CorralError(msg)
    _QUEUES[saver] = queue
    return queue


def submit(app: QueuedApp, input: Any, *, thread_id: str, budget: Budget | None = None) -> int:
    """Queue a run of ``thread_id`` from ``input`` (or ``Resume(value)``, or ``None`` to
    continue) under ``budget`` (a ``Budget``, or ``None``); return the queued run's id."""
    if not isinstance(thread_id, str) or not thread_id:
        msg = f"submit() needs a thread_id, a non-empty str, not {thread_id!r}"
        raise CorralError(msg)
    check_thread_id(thread_id)  # a lone surrogate: named before the queue's database sees it
    queue = queue_for(app)
    text, resume = dump_input(input, getattr(app.checkpointer, "serializer", None))
    budget = require(budget, Budget, "budget")
    request = None if budget is None else json.dumps({"budget": budget.to_json()})
    return queue.submit(thread_id, text, resume, request)


def wait(app: QueuedApp, thread_id: str, timeout: float | None = None) -> Run[Any]:
    """Return the :class:`~corral.Run` of the thread's newest queued run once it ended.

    Raises:
        RunFailedError: the worker ended the run with an error (it says which).
        WaitTimeoutError: ``timeout`` seconds passed first.
        CorralError: nothing was ever submitted to the thread.
    """
    queue = queue_for(app)
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.005
    unreachable_since: float | None = None
    while True:
        try:
            outcome = queue.newest_run(thread_id)
        except CheckpointError:
            # A database that restarts is waited for, up to _UNREACHABLE_S at a stretch.
            now = time.monotonic()
            unreachable_since = unreachable_since or now
            if now - unreachable_since > _UNREACHABLE_S or (deadline and now >= deadline):
                raise
            time.sleep(0.1)
            continue
        unreachable_since = None
        if outcome is None:
            msg = f"thread {thread_id!r} has no queued run; submit one with app.submit(...)"
            raise CorralError(msg)
        if not outcome.open:
            break
        if deadline is not None and time.monotonic() >= deadline:
            msg = (
                f"run {outcome.id} of thread {thread_id!r} is still {outcome.status} "
                f"after timeout={timeout}; wait longer, or check that a worker runs "
                "(corral worker PATH --db URL)"
            )
            raise WaitTimeoutError(
                msg, thread_id=thread_id, timeout_s=float(timeout or 0), status=outcome.status
            )
        time.sleep(pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 1.5, 0.2)
    if outcome.status == "failed":
        error = outcome.error or "unknown error"
        msg = f"run {outcome.id} of thread {thread_id!r} failed in a worker: {error}"
        raise RunFailedError(msg, thread_id=thread_id, run_id=outcome.id, error=error)
    snap = app.get_state(thread_id)
    return Run(
        snap.values,
        steps=snap.steps,
        supersteps=snap.supersteps,
        status=outcome.status,
        interrupts=list(snap.interrupts),
        guards=snap.guards,
        thread_id=thread_id,
        checkpoint_id=snap.checkpoint_id,
        spent=snap.spent,
    )
