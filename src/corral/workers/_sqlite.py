"""The run queue in a SQLite checkpoint file, for workers on one machine.

The table lives in the saver's own file, next to the checkpoints; every change is one
``BEGIN IMMEDIATE`` transaction, so claims from several processes are serialized by
SQLite's write lock (no ``SKIP LOCKED`` needed). Lease times are this machine's clock
(``time.time()``), which every worker on the machine shares.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from corral.checkpoint.sqlite._schema import WAIT_SLICE_S, error_for, execute_patiently
from corral.workers.queue import Outcome, QueuedRun, lease_lost
from corral.workers.served import add_served_columns

if TYPE_CHECKING:
    from corral.checkpoint.base import Fence

__all__ = ["SqliteQueue"]

_TABLE = """
CREATE TABLE IF NOT EXISTS corral_runs (
    id INTEGER PRIMARY KEY,
    thread TEXT NOT NULL,
    input TEXT,
    resume INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'queued',
    base TEXT,
    owner TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    submitted REAL NOT NULL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS corral_runs_thread ON corral_runs (thread, id);
"""

_PICK = """
SELECT r.id, r.thread, r.input, r.resume, r.base, r.attempts, r.graph, r.command, r.fork,
    r.request
FROM corral_runs AS r
WHERE (r.status = 'queued' OR (r.status = 'running' AND r.lease_until < :now))
    AND (r.graph IS NULL OR r.graph IN (SELECT value FROM json_each(:graphs)))
    AND NOT EXISTS (
        SELECT 1 FROM corral_runs AS e
        WHERE e.thread = r.thread AND e.id < r.id AND e.status IN ('queued', 'running'))
ORDER BY r.id LIMIT 1
"""

_INSERT_SERVED = """
INSERT INTO corral_runs (thread, input, resume, uuid, graph, request, command, fork, submitted)
VALUES (:thread, :input, :resume, :uuid, :graph, :request, :command, :fork,
    (julianday('now') - 2440587.5) * 86400.0)
RETURNING id
"""

_HELD = """
SELECT 1 FROM corral_runs WHERE id = ? AND owner = ? AND attempts = ? AND status = 'running'
"""


class SqliteQueue:
    """The queue of a :class:`~corral.checkpoint.SqliteSaver`'s file."""

    def __init__(self, path: str, timeout_s: float = 30.0) -> None:
        self.where = path
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        with self._tx("open the run queue in") as conn:
            for statement in _TABLE.split(";"):
                if statement.strip():
                    conn.execute(statement)
            present = {row[1] for row in conn.execute("PRAGMA table_info(corral_runs)")}
            add_served_columns(conn, present)

    # what corral.workers.served needs: the same statements in both databases
    epoch = "submitted"
    insert_served = _INSERT_SERVED

    def transaction(
        self, verb: str, write: bool = True
    ) -> AbstractContextManager[sqlite3.Connection]:
        return self._tx(verb, "BEGIN IMMEDIATE" if write else "BEGIN")

    @staticmethod
    def sql(statement: str) -> str:
        return statement

    @staticmethod
    def lock_thread(conn: sqlite3.Connection, thread_id: str) -> None:
        """Nothing: every transaction holds the file's write lock."""

    @contextmanager
    def _tx(self, verb: str, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """Yield the connection inside a ``BEGIN IMMEDIATE`` transaction (``begin="BEGIN"``:
        one that only reads, taking no write lock), committed at the end."""
        with self._lock:
            try:
                if self._conn is None or self._pid != os.getpid():
                    self._conn = sqlite3.connect(
                        self.where,
                        timeout=WAIT_SLICE_S,  # waits in slices: Ctrl-C is heard between them
                        isolation_level=None,
                        check_same_thread=False,
                    )
                    self._pid = os.getpid()
                conn = self._conn
                execute_patiently(conn, self.timeout_s, begin)
                try:
                    yield conn
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise error_for(self.where, self.timeout_s, verb, exc) from exc

    def submit(
        self, thread_id: str, input: str | None, resume: bool, request: str | None = None
    ) -> int:
        with self._tx("queue a run in") as conn:
            cur = conn.execute(
                "INSERT INTO corral_runs (thread, input, resume, request, submitted) "
                "VALUES (?, ?, ?, ?, ?)",
                (thread_id, input, int(resume), request, time.time()),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def claim(self, owner: str, lease_s: float, graphs: Sequence[str]) -> QueuedRun | None:
        with self._tx("take a run from") as conn:
            now = time.time()
            row = conn.execute(_PICK, {"now": now, "graphs": json.dumps(list(graphs))}).fetchone()
            if row is None:
                return None
            run_id, thread, input, resume, base, attempts, graph, command, fork, request = row
            conn.execute(
                "UPDATE corral_runs SET status = 'running', owner = ?, lease_until = ?, "
                "attempts = attempts + 1 WHERE id = ?",
                (owner, now + lease_s, run_id),
            )
        return QueuedRun(
            int(run_id),
            str(thread),
            input,
            bool(resume),
            base,
            int(attempts) + 1,
            graph,
            command,
            fork,
            request,
        )

    def start(self, run_id: int, owner: str, base: str) -> bool:
        with self._tx("start a run in") as conn:
            cur = conn.execute(
                "UPDATE corral_runs SET base = ? WHERE id = ? AND owner = ? AND status = 'running'",
                (base, run_id, owner),
            )
            return cur.rowcount == 1

    def renew(self, owner: str, run_ids: list[int], lease_s: float) -> set[int]:
        if not run_ids:
            return set()
        with self._tx("renew leases in") as conn:
            held: set[int] = set()
            until = time.time() + lease_s
            for run_id in run_ids:
                cur = conn.execute(
                    "UPDATE corral_runs SET lease_until = ? WHERE id = ? AND owner = ? "
                    "AND status = 'running'",
                    (until, run_id, owner),
                )
                if cur.rowcount == 1:
                    held.add(run_id)
            return held

    def finish(self, run_id: int, owner: str, status: str, error: str | None) -> bool:
        with self._tx("finish a run in") as conn:
            cur = conn.execute(
                "UPDATE corral_runs SET status = ?, error = ?, finished = ?, lease_until = NULL "
                "WHERE id = ? AND owner = ? AND status = 'running'",
                (status, error, time.time(), run_id, owner),
            )
            return cur.rowcount == 1

    def release(self, run_id: int, owner: str) -> bool:
        with self._tx("release a run in") as conn:
            cur = conn.execute(
                "UPDATE corral_runs SET status = 'queued', owner = NULL, lease_until = NULL "
                "WHERE id = ? AND owner = ? AND status = 'running'",
                (run_id, owner),
            )
            return cur.rowcount == 1

    def outcome(self, thread_id: str) -> Outcome | None:
        with self._tx("read runs from") as conn:
            row = conn.execute(
                "SELECT id, status, error FROM corral_runs WHERE thread = ? "
                "ORDER BY id DESC LIMIT 1",
                (thread_id,),
            ).fetchone()
        return None if row is None else Outcome(int(row[0]), str(row[1]), row[2])

    def fence(self, run: QueuedRun, owner: str) -> Fence:
        where = self.where

        def held(conn: sqlite3.Connection) -> None:
            # Inside the write's BEGIN IMMEDIATE: no claim can commit until the write does.
            if conn.execute(_HELD, (run.id, owner, run.attempts)).fetchone() is None:
                raise lease_lost(run, owner, where)

        return held

    def close(self) -> None:
        """Close this process's connection to the file."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
