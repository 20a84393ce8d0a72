"""Runs with an id of their own in the queue: the runs ``corral serve`` creates.

A served run is a row of ``corral_runs`` like any queued run, with the columns the Agent
Protocol needs: its id (``uuid``), its graph, the request it was made from (metadata,
multitask strategy, stream modes...), and a cancel request. Whichever worker takes it,
the server's own or a ``corral worker`` elsewhere, runs it from the row (its input, its
``command`` and the checkpoint it forks from, see :func:`~corral.workers.queue.load_input`)
and stops before its next node once ``cancel`` is set. So a run's record and its place in
the queue are one row: it is queued exactly when it is recorded.

The statements are written once, with ``:name`` parameters; each queue gives the
transaction (one that only reads takes no write lock in SQLite), the placeholder style and
the lock that orders the runs of one thread.
"""

from __future__ import annotations

from typing import Any, Final

from corral.errors import BusyThreadError
from corral.workers.queue import QueuedRun, RunQueue, run_of

__all__ = ["SERVED_COLUMNS", "ServedRuns", "add_served_columns"]

SERVED_COLUMNS: Final = tuple(f"{c} TEXT" for c in "uuid graph request command fork cancel".split())
"""The columns a served run adds to ``corral_runs``, added to a table made without them."""

_SHOWN: Final = "(cancel IS NULL OR cancel <> 'delete')"
"""Not a run whose thread was deleted (its cancel request is ``'delete'``)."""
_OPEN = "status IN ('queued', 'running')"


class ServedRuns:
    """The served runs of a queue."""

    def __init__(self, queue: RunQueue) -> None:
        self._queue = queue

    def _all(self, db: Any, where: str, **params: Any) -> list[QueuedRun]:
        sql = f"SELECT {self._queue.columns} FROM corral_runs WHERE {where} ORDER BY id DESC"
        return [run_of(row) for row in db.execute(self._queue.sql(sql), params).fetchall()]

    def _find(self, where: str, **params: Any) -> list[QueuedRun]:
        with self._queue.transaction("read runs from", write=False) as db:
            return self._all(db, where, **params)

    def _change(self, verb: str, sql: str, **params: Any) -> None:
        with self._queue.transaction(verb) as db:
            db.execute(self._queue.sql(sql), params)

    def add(self, run: QueuedRun, *, reject: bool = False) -> int:
        """Queue ``run`` (its id, thread, graph, request, input, command and fork); return
        its queue id.

        With ``reject`` (``multitask_strategy="reject"``) it is refused when the thread has a
        run queued or running: the check and the insert are one transaction holding the
        thread's lock, so two servers cannot both accept.

        Raises:
            BusyThreadError: ``reject`` and the thread is busy.
        """
        thread = run.thread_id
        with self._queue.transaction("queue a run in") as db:
            self._queue.lock_thread(db, thread)
            where = f"thread = :thread AND {_OPEN} AND {_SHOWN}"
            if reject and (busy := self._all(db, where, thread=thread)):
                msg = (
                    f"thread {thread!r} is busy with run {busy[-1].uuid!r} ({busy[-1].status}); "
                    'wait for it, or send multitask_strategy="enqueue" to run after it'
                )
                raise BusyThreadError(msg, thread_id=thread)
            return self._queue.insert(
                db,
                thread=thread,
                input=run.input,
                resume=run.resume,
                uuid=run.uuid,
                graph=run.graph,
                request=run.request,
                command=run.command,
                fork=run.fork,
            )

    def get(self, uuid: str) -> QueuedRun | None:
        """Return the run with this id (``None``: none, or its thread was deleted)."""
        found = self._find(f"uuid = :uuid AND {_SHOWN}", uuid=uuid)
        return found[0] if found else None

    def of_thread(self, thread_id: str) -> list[QueuedRun]:
        """Return the thread's served runs, newest first."""
        return self._find(f"thread = :thread AND uuid IS NOT NULL AND {_SHOWN}", thread=thread_id)

    def cancel_asked(self, run_id: int) -> str | None:
        """Return the cancel asked for queued run ``run_id`` (``None``: none)."""
        with self._queue.transaction("read runs from", write=False) as db:
            sql = "SELECT cancel FROM corral_runs WHERE id = :id"
            row = db.execute(self._queue.sql(sql), {"id": run_id}).fetchone()
        return None if row is None else row[0]

    def cancel(self, uuid: str, action: str = "interrupt") -> None:
        """Ask the run to stop before its next node (whichever worker holds it)."""
        sql = "UPDATE corral_runs SET cancel = :cancel WHERE uuid = :uuid"
        self._change("cancel a run in", sql, cancel=action, uuid=uuid)

    def delete(self, uuid: str) -> None:
        """Forget an ended run."""
        sql = f"DELETE FROM corral_runs WHERE uuid = :uuid AND NOT {_OPEN}"
        self._change("delete a run from", sql, uuid=uuid)

    def delete_thread(self, thread_id: str, saver: Any) -> None:
        """Delete the thread: its runs (those that ended or never started go; a running one
        is asked to stop, ``cancel = 'delete'``, and is no longer shown), then its
        checkpoints and record in ``saver``, the checkpointer that holds this queue."""
        with self._queue.transaction("delete runs from") as db:
            self._queue.lock_thread(db, thread_id)
            for sql in (
                "DELETE FROM corral_runs WHERE thread = :thread AND status <> 'running'",
                "UPDATE corral_runs SET cancel = 'delete' WHERE thread = :thread",
            ):
                db.execute(self._queue.sql(sql), {"thread": thread_id})
        saver.delete_thread(thread_id)


def add_served_columns(db: Any) -> None:
    """Add the :data:`SERVED_COLUMNS` ``corral_runs`` lacks and the index on ``uuid``, in
    the caller's transaction (which holds the lock that orders creating tables)."""
    present = {column[0] for column in db.execute("SELECT * FROM corral_runs LIMIT 0").description}
    missing = [c for c in SERVED_COLUMNS if c.split()[0] not in present]
    for column in missing:
        db.execute(f"ALTER TABLE corral_runs ADD COLUMN {column}")
    if missing:
        db.execute("CREATE UNIQUE INDEX corral_runs_uuid ON corral_runs (uuid)")
