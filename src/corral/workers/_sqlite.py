"""The run queue in a SQLite checkpoint file, for workers on one machine.

The table lives in the saver's own file, next to the checkpoints; every change is one
``BEGIN IMMEDIATE`` transaction, so claims from several processes are serialized by
SQLite's write lock (no ``SKIP LOCKED`` needed). Lease times are this machine's clock,
read by SQLite, which every worker on the machine shares.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from corral.checkpoint.sqlite._schema import WAIT_SLICE_S, error_for, transaction
from corral.workers.queue import RunQueue
from corral.workers.served import add_served_columns

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

_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
"""The time now in seconds since 1970, as ``time.time()`` gives it."""


class SqliteQueue(RunQueue):
    """The queue of a :class:`~corral.checkpoint.SqliteSaver`'s file."""

    def __init__(self, path: str, timeout_s: float = 30.0) -> None:
        self.where = path
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        with self.transaction("open the run queue in") as conn:
            for statement in _TABLE.split(";"):
                if statement.strip():
                    conn.execute(statement)
            add_served_columns(conn)

    now = _NOW
    later = f"{_NOW} + :lease"
    graphs = "SELECT value FROM json_each(:graphs)"
    epoch = "submitted"

    @contextmanager
    def transaction(self, verb: str, write: bool = True) -> Iterator[sqlite3.Connection]:
        """Yield the connection inside a ``BEGIN IMMEDIATE`` transaction (``write=False``:
        ``BEGIN``, one that only reads, taking no write lock), committed at the end."""
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
                with transaction(self._conn, read=not write, timeout_s=self.timeout_s):
                    yield self._conn
            except sqlite3.DatabaseError as exc:
                raise error_for(self.where, self.timeout_s, verb, exc) from exc

    def close(self) -> None:
        """Close this process's connection to the file."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
