"""``SqliteSaver``: the store of :mod:`corral.checkpoint._store` in one SQLite file."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from corral._where import check_sqlite_path
from corral.checkpoint import _tables
from corral.checkpoint._store import Store
from corral.checkpoint.serde import Serializer
from corral.checkpoint.sqlite._schema import error_for, open_file, transaction, transient
from corral.errors import CheckpointError

__all__ = ["SqliteSaver"]


class SqliteSaver(Store):
    """A checkpointer backed by one SQLite file, safe for several processes at once.

    Args:
        path: the database file; its folder is created. ``":memory:"`` keeps it in memory.
        serializer: teaches the encoding values JSON cannot hold (see
            :class:`~corral.checkpoint.serde.Serializer`); pass the same one to read them.
        synchronous: ``"FULL"`` (default) syncs every checkpoint to disk, so a committed
            checkpoint survives a power cut; ``"NORMAL"`` syncs less often (in WAL mode a
            process crash still loses nothing, a power cut may lose the newest checkpoints).
        timeout_s: how long a call waits for another process's transaction to finish
            (in slices, so that a Ctrl-C gets through at once).

    >>> from corral.checkpoint import Checkpoint
    >>> with SqliteSaver(":memory:") as saver:
    ...     saver.put(Checkpoint("t", "1", None, {"n": 1}))
    ...     saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))
    ...     [(c.checkpoint_id, c.writes) for c in saver.chain("t")]
    [('1', []), ('2', [('inc', {'n': 2})])]
    """

    items_query = _tables.ITEMS_SQLITE
    sql = staticmethod(str)  # the statements are in SQLite's style
    transient = staticmethod(transient)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        serializer: Serializer | None = None,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        timeout_s: float = 30.0,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            msg = f"synchronous={synchronous!r} is not a SQLite sync level; use 'FULL' or 'NORMAL'"
            raise ValueError(msg)
        super().__init__()
        self.path = self.where = os.fspath(path)
        check_sqlite_path(self.path)  # a FIFO or /dev/null is not "a disk full or failing"
        self.serializer = serializer
        self.synchronous = synchronous
        self.timeout_s = timeout_s
        self._conn_lock = threading.RLock()
        """Held while the connection is in use: ``ainvoke`` may call from several threads."""
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._closed = False
        with self._conn_lock:
            self._connection()

    def close(self) -> None:
        """Close the file; later calls raise ``CheckpointError``. Closing twice is harmless."""
        with self._conn_lock:
            self._closed = True
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None  # a connection inherited through fork is dropped, not closed

    def __repr__(self) -> str:
        return f"SqliteSaver({self.path!r})"

    @property
    def connection(self) -> sqlite3.Connection:
        """This process's connection to the file, to read its tables or set a ``PRAGMA``
        (hold no transaction open on it: the saver's own calls wait for it)."""
        with self._conn_lock:
            return self._connection()

    def _connection(self) -> sqlite3.Connection:
        """Return this process's connection, opening (and checking) the file on first use."""
        if self._closed:
            msg = f"the SqliteSaver for {self.path!r} is closed; create a new one to go on"
            raise CheckpointError(msg, path=self.path)
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # First use, or a forked child: a SQLite connection must not cross a fork.
        self._conn = None
        try:
            conn = open_file(self.path, self.synchronous, self.timeout_s)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise error_for(self.path, self.timeout_s, "open", exc) from exc
        self._conn, self._pid = conn, os.getpid()
        return conn

    @contextmanager
    def _transaction(self, verb: str, *, read: bool) -> Iterator[sqlite3.Connection]:
        """Yield the connection in a transaction: a write takes the write lock at once
        (``BEGIN IMMEDIATE``: one writer); a read sees one consistent, committed view."""
        with self._conn_lock:
            conn = self._connection()
            try:
                with transaction(conn, read=read, timeout_s=self.timeout_s):
                    yield conn
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                raise error_for(self.path, self.timeout_s, verb, exc) from exc
