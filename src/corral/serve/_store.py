"""What the server keeps beyond checkpoints: thread metadata and run records.

Two tables of their own, in the checkpointer's database (the SQLite file, or the
PostgreSQL database), next to the queue of :mod:`corral.workers`:

- ``corral_serve_threads``: one row per thread the API knows (its metadata as JSON, the
  graph of its first run, times);
- ``corral_serve_runs``: one row per run created through the API (its request, its
  ``corral_runs`` queue id once submitted, a cancel request).

A run's status is never stored here: it is read from its queue row (``queued`` is
``pending``, ``done`` and ``interrupted`` are ``success``, ``failed`` is ``error``, or
``interrupted`` when a cancel was asked), so a run taken by a ``corral worker`` on another
machine reports the truth. Every statement is parameterised: ids from a URL are values,
never SQL text.

This module is the one seam to move when the store is redesigned: the API and the page
call only :class:`ServeStore`'s methods, which take and return plain values.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from corral.errors import BusyThreadError, CheckpointError, CorralError

__all__ = ["ACTIVE", "RunRecord", "ServeStore", "ThreadRecord", "open_store"]

_TABLES = (
    """CREATE TABLE IF NOT EXISTS corral_serve_threads (
        thread_id TEXT PRIMARY KEY,
        graph TEXT,
        metadata TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS corral_serve_runs (
        run_id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        assistant_id TEXT NOT NULL,
        queue_id BIGINT,
        metadata TEXT NOT NULL,
        kwargs TEXT NOT NULL,
        multitask_strategy TEXT NOT NULL,
        temporary INTEGER NOT NULL DEFAULT 0,
        started INTEGER NOT NULL DEFAULT 0,
        cancel TEXT,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS corral_serve_runs_thread ON corral_serve_runs (thread_id)",
)

_RUN_COLUMNS = (
    "r.run_id, r.thread_id, r.assistant_id, r.queue_id, r.metadata, r.kwargs, "
    "r.multitask_strategy, r.temporary, r.started, r.cancel, r.created_at, q.status, q.error"
)
_RUNS = (
    f"SELECT {_RUN_COLUMNS} FROM corral_serve_runs AS r "
    "LEFT JOIN corral_runs AS q ON q.id = r.queue_id"
)

_ORPHAN = (
    "SELECT q.id FROM corral_runs AS q WHERE q.thread = ? AND NOT EXISTS "
    "(SELECT 1 FROM corral_serve_runs AS r WHERE r.queue_id = q.id)"
)
"""The thread's queue rows no run record names (``ORDER BY`` is added by the caller)."""

_STATUS = {"queued": "pending", "running": "running", "done": "success"}
_STATUS.update({"interrupted": "success", "failed": "error"})
"""Queue status -> run status. As on LangGraph's server, a run that paused for a person
ended well (``success``; its thread is ``interrupted``); a cancelled run is ``interrupted``."""
ACTIVE = frozenset({"pending", "running"})
"""The statuses of a run that has not ended."""


@dataclass(frozen=True)
class ThreadRecord:
    """One thread the API knows."""

    thread_id: str
    graph: str | None
    """The graph of its first run (``None`` until it has one)."""
    metadata: dict[str, Any]
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class RunRecord:
    """One run created through the API, with its status read from the queue."""

    run_id: str
    thread_id: str
    assistant_id: str
    queue_id: int | None
    metadata: dict[str, Any]
    kwargs: dict[str, Any]
    """The request's run fields (input, command, stream_mode, interrupt_before...)."""
    multitask_strategy: str
    temporary: bool
    """A stateless run: its thread is deleted when it ends (unless ``on_completion="keep"``)."""
    started: int
    """How many times a server worker started it."""
    cancel: str | None
    """The cancel action asked (``"interrupt"``), if any."""
    created_at: float
    status: str
    """``pending``, ``running``, ``success``, ``error`` or ``interrupted``."""
    error: str | None


class _Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...


class ServeStore:
    """The server's threads and runs, in a SQLite file or a PostgreSQL database."""

    def __init__(self, backend: _Backend) -> None:
        self._db = backend
        with self._db.tx() as conn:
            for statement in _TABLES:
                conn.execute(statement)

    def close(self) -> None:
        """Close what the store opened (not the checkpointer's pool)."""
        self._db.close()

    # -- threads ---------------------------------------------------------------------

    def create_thread(
        self, thread_id: str, metadata: dict[str, Any], graph: str | None = None
    ) -> tuple[ThreadRecord, bool]:
        """Add a thread; return it and whether it is new (an existing one is left as it is)."""
        now = time.time()
        with self._db.tx() as conn:
            found = self._thread(conn, thread_id)
            if found is not None:
                return found, False
            conn.execute(
                "INSERT INTO corral_serve_threads VALUES (?, ?, ?, ?, ?)",
                (thread_id, graph, _dump(metadata), now, now),
            )
        return ThreadRecord(thread_id, graph, metadata, now, now), True

    def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """Return the thread, or ``None`` when the API does not know it."""
        with self._db.tx(write=False) as conn:
            return self._thread(conn, thread_id)

    def threads(self) -> list[ThreadRecord]:
        """Return every thread, the most recently updated first."""
        with self._db.tx(write=False) as conn:
            rows = conn.execute(
                "SELECT thread_id, graph, metadata, created_at, updated_at "
                "FROM corral_serve_threads ORDER BY updated_at DESC, thread_id"
            ).fetchall()
        return [_thread_of(row) for row in rows]

    def update_thread(
        self, thread_id: str, *, metadata: dict[str, Any] | None = None, graph: str | None = None
    ) -> None:
        """Merge ``metadata`` into the thread's, set its graph if it has none, touch it."""
        with self._db.tx() as conn:
            found = self._thread(conn, thread_id)
            if found is None:
                return
            merged = {**found.metadata, **(metadata or {})}
            conn.execute(
                "UPDATE corral_serve_threads SET metadata = ?, graph = COALESCE(graph, ?), "
                "updated_at = ? WHERE thread_id = ?",
                (_dump(merged), graph, time.time(), thread_id),
            )

    def delete_thread(self, thread_id: str) -> bool:
        """Forget the thread and its ended runs; return whether it was known.

        A run still pending or running is asked to stop (cancel ``"delete"``): its worker
        drops its record once it stopped (:meth:`forget_run`), so a queued run of a deleted
        thread never runs. The checkpoints stay in the database (the checkpointer has no
        delete).
        """
        with self._db.tx() as conn:
            for run in self._runs(conn, thread_id):
                if run.status in ACTIVE:
                    conn.execute(
                        "UPDATE corral_serve_runs SET cancel = 'delete' WHERE run_id = ?",
                        (run.run_id,),
                    )
                else:
                    conn.execute("DELETE FROM corral_serve_runs WHERE run_id = ?", (run.run_id,))
            cur = conn.execute("DELETE FROM corral_serve_threads WHERE thread_id = ?", (thread_id,))
            return bool(cur.rowcount)

    def forget_run(self, run: RunRecord) -> None:
        """Drop the record of an ended run whose thread was deleted."""
        with self._db.tx() as conn:
            if self._thread(conn, run.thread_id) is None:
                conn.execute("DELETE FROM corral_serve_runs WHERE run_id = ?", (run.run_id,))

    @staticmethod
    def _thread(conn: _Connection, thread_id: str) -> ThreadRecord | None:
        row = conn.execute(
            "SELECT thread_id, graph, metadata, created_at, updated_at "
            "FROM corral_serve_threads WHERE thread_id = ?",
            (thread_id,),
        ).fetchone()
        return None if row is None else _thread_of(row)

    # -- runs ------------------------------------------------------------------------

    def add_run(self, run: RunRecord) -> None:
        """Record a new run and note its graph in its thread's metadata; under ``reject``,
        refuse it when the thread has one in flight.

        The check and the insert are one transaction holding the thread's row (SQLite's
        write lock, PostgreSQL's ``FOR UPDATE``), so two servers cannot both accept.

        Raises:
            BusyThreadError: ``reject`` and a run of the thread is pending or running.
        """
        with self._db.tx() as conn:
            conn.execute(self._db.lock_thread, (run.thread_id,))
            if run.multitask_strategy == "reject":
                active = [r for r in self._runs(conn, run.thread_id) if r.status in ACTIVE]
                if active:
                    msg = (
                        f"thread {run.thread_id!r} is busy with run {active[0].run_id!r} "
                        f"({active[0].status}); wait for it, or send "
                        'multitask_strategy="enqueue" to run after it'
                    )
                    raise BusyThreadError(msg, thread_id=run.thread_id)
            conn.execute(
                "INSERT INTO corral_serve_runs (run_id, thread_id, assistant_id, metadata, "
                "kwargs, multitask_strategy, temporary, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    run.thread_id,
                    run.assistant_id,
                    _dump(run.metadata),
                    _dump(run.kwargs),
                    run.multitask_strategy,
                    int(run.temporary),
                    run.created_at,
                ),
            )
            found = self._thread(conn, run.thread_id)
            if found is not None:  # the thread belongs to the graph of its first run
                graph = {"graph_id": run.assistant_id, "assistant_id": run.assistant_id}
                conn.execute(
                    "UPDATE corral_serve_threads SET metadata = ?, "
                    "graph = COALESCE(graph, ?), updated_at = ? WHERE thread_id = ?",
                    (
                        _dump({**found.metadata, **graph}),
                        run.assistant_id,
                        time.time(),
                        run.thread_id,
                    ),
                )

    def set_queue_id(self, run_id: str, queue_id: int) -> None:
        """Note the ``corral_runs`` id the run was submitted as."""
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE corral_serve_runs SET queue_id = ? WHERE run_id = ?", (queue_id, run_id)
            )

    def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run, or ``None``."""
        with self._db.tx(write=False) as conn:
            row = conn.execute(f"{_RUNS} WHERE r.run_id = ?", (run_id,)).fetchone()
        return None if row is None else _run_of(row)

    def runs(self, thread_id: str) -> list[RunRecord]:
        """Return the thread's runs, newest first."""
        with self._db.tx(write=False) as conn:
            return self._runs(conn, thread_id)

    def recover(self, older_than_s: float) -> list[RunRecord]:
        """Settle the runs recorded but not known to be queued (a server died in between).

        A run whose thread has a queue row no record names was queued and its server died
        before noting it: the record adopts that row (the run is not queued twice). Each
        other one, recorded more than ``older_than_s`` seconds ago, is claimed (so that two
        servers starting at once do not both queue it) and returned, to be queued.
        """
        cutoff = time.time() - older_than_s
        with self._db.tx() as conn:
            rows = conn.execute(
                f"{_RUNS} WHERE r.queue_id IS NULL AND r.created_at < ? ORDER BY r.created_at",
                (cutoff,),
            ).fetchall()
            left = []
            for run in (_run_of(row) for row in rows):
                orphan = conn.execute(_ORPHAN + " ORDER BY q.id", (run.thread_id,)).fetchone()
                claimed = 0 if orphan is None else int(orphan[0])
                conn.execute(
                    "UPDATE corral_serve_runs SET queue_id = ? WHERE run_id = ?",
                    (claimed, run.run_id),
                )
                if orphan is None:
                    left.append(run)
        return left

    def adopt(self, thread_id: str, run_id: str) -> bool:
        """Give the run the thread's running queue row no record names; ``False`` if none."""
        with self._db.tx() as conn:
            orphan = conn.execute(
                _ORPHAN + " AND q.status = 'running' ORDER BY q.id", (thread_id,)
            ).fetchone()
            if orphan is None:
                return False
            conn.execute(
                "UPDATE corral_serve_runs SET queue_id = ? WHERE run_id = ? AND queue_id IS NULL",
                (int(orphan[0]), run_id),
            )
            return True

    def running_run(self, thread_id: str) -> RunRecord | None:
        """Return the thread's run a worker holds now (its queue row is ``running``), else
        a run of the thread still waiting for its queue id (being submitted)."""
        with self._db.tx(write=False) as conn:
            row = conn.execute(
                f"{_RUNS} WHERE r.thread_id = ? AND (q.status = 'running' OR r.queue_id IS NULL) "
                "ORDER BY r.queue_id IS NULL, q.id LIMIT 1",
                (thread_id,),
            ).fetchone()
        return None if row is None else _run_of(row)

    def note_started(self, run_id: str) -> int:
        """Count one more start of the run by a server worker; return the count before."""
        with self._db.tx() as conn:
            row = conn.execute(
                "SELECT started FROM corral_serve_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            conn.execute(
                "UPDATE corral_serve_runs SET started = started + 1 WHERE run_id = ?", (run_id,)
            )
        return int(row[0]) if row is not None else 0

    def request_cancel(self, run_id: str, action: str) -> None:
        """Ask the run to stop before its next node."""
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE corral_serve_runs SET cancel = ? WHERE run_id = ?", (action, run_id)
            )

    def delete_run(self, run_id: str) -> None:
        """Forget the run's record."""
        with self._db.tx() as conn:
            conn.execute("DELETE FROM corral_serve_runs WHERE run_id = ?", (run_id,))

    @staticmethod
    def _runs(conn: _Connection, thread_id: str) -> list[RunRecord]:
        rows = conn.execute(
            f"{_RUNS} WHERE r.thread_id = ? ORDER BY r.created_at DESC, r.run_id", (thread_id,)
        ).fetchall()
        return [_run_of(row) for row in rows]


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _thread_of(row: Sequence[Any]) -> ThreadRecord:
    thread_id, graph, metadata, created, updated = row
    return ThreadRecord(str(thread_id), graph, json.loads(metadata), float(created), float(updated))


def _run_of(row: Sequence[Any]) -> RunRecord:
    run_id, thread_id, assistant_id, queue_id, metadata, kwargs, strategy = row[:7]
    temporary, started, cancel, created, queue_status, error = row[7:]
    status = _STATUS.get(queue_status, "pending")
    if status == "error" and cancel:
        status = "interrupted"
    return RunRecord(
        str(run_id),
        str(thread_id),
        str(assistant_id),
        None if queue_id is None else int(queue_id),
        json.loads(metadata),
        json.loads(kwargs),
        str(strategy),
        bool(temporary),
        int(started),
        cancel,
        float(created),
        status,
        None if status != "error" else error,
    )


# -- the two databases --------------------------------------------------------------------


class _Backend(Protocol):
    lock_thread: str
    """A statement that locks the thread's row until the transaction ends (``?`` = id)."""

    def tx(self, write: bool = True) -> Any:
        """A transaction; ``write=False`` only reads (SQLite takes no write lock)."""
        ...

    def close(self) -> None: ...


class _Sqlite:
    lock_thread = "UPDATE corral_serve_threads SET thread_id = thread_id WHERE thread_id = ?"

    def __init__(self, path: str, timeout_s: float) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            path, timeout=timeout_s, isolation_level=None, check_same_thread=False
        )

    @contextmanager
    def tx(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                msg = f"the server's tables in {self.path!r}: {exc}; is the file writable?"
                raise CheckpointError(msg, path=self.path) from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class _PgConnection:
    """A psycopg connection that takes SQLite's ``?`` placeholders."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), tuple(params))


class _Postgres:
    lock_thread = "SELECT 1 FROM corral_serve_threads WHERE thread_id = ? FOR UPDATE"

    def __init__(self, pool: Any, where: str) -> None:
        self.pool = pool
        self.where = where

    @contextmanager
    def tx(self, write: bool = True) -> Iterator[_PgConnection]:
        import psycopg

        try:
            with self.pool.connection() as conn, conn.transaction():
                yield _PgConnection(conn)
        except psycopg.Error as exc:
            # psycopg's messages name the server, never the password; `where` is redacted
            msg = f"the server's tables in {self.where}: {type(exc).__name__}: {exc}"
            raise CheckpointError(msg, path=self.where) from exc

    def close(self) -> None:
        """The pool belongs to the checkpointer, which closes it."""


def open_store(saver: Any) -> ServeStore:
    """Return the store in the database of ``saver`` (a ``SqliteSaver`` or ``PostgresSaver``).

    Raises:
        CorralError: the checkpointer keeps no database the server can share.
    """
    from corral.checkpoint.postgres import PostgresSaver
    from corral.checkpoint.sqlite import SqliteSaver

    if isinstance(saver, PostgresSaver):
        return ServeStore(_Postgres(saver.pool, saver.where))
    if isinstance(saver, SqliteSaver) and saver.path != ":memory:":
        return ServeStore(_Sqlite(saver.path, saver.timeout_s))
    msg = f"corral serve keeps its runs in the checkpointer's database, and {saver!r} has none"
    raise CorralError(msg)
