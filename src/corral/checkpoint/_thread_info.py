"""What a database saver keeps about a thread beside its checkpoints, and deleting a thread.

A thread's row of ``corral_threads`` also holds what its owner recorded about it (``corral
serve``: the client's metadata, the graph of its first run, when it was created and last
changed). A thread may be recorded before its first checkpoint: its row then has
``newest = ''``, which the first put takes over (``PUT_FIRST``). A thread nobody recorded
(``metadata`` NULL) has no :class:`ThreadInfo`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from corral.checkpoint.base import check_thread_id

__all__ = ["ThreadInfo", "ThreadInfoStore"]

_COLUMNS = "name, graph, metadata, created_at, updated_at"
_ADD = """
INSERT INTO corral_threads (name, newest, metadata, created_at, updated_at)
VALUES (:thread, '', :metadata, :now, :now)
ON CONFLICT (name) DO UPDATE SET metadata = excluded.metadata,
    created_at = excluded.created_at, updated_at = excluded.updated_at
WHERE corral_threads.metadata IS NULL
RETURNING name
"""
"""Record a thread (a row back: recorded now; none: it was recorded before)."""
_TOUCH = f"""
UPDATE corral_threads SET updated_at = :now, graph = COALESCE(graph, :graph)
WHERE name = :thread AND metadata IS NOT NULL RETURNING {_COLUMNS}
"""
"""The first statement of a change: in PostgreSQL it locks the row until the change commits,
so two merges of metadata never lose one another."""
_SET = "UPDATE corral_threads SET metadata = :metadata WHERE name = :thread"
_ALL = f"SELECT {_COLUMNS} FROM corral_threads WHERE metadata IS NOT NULL"
_ONE = f"{_ALL} AND name = :thread"
_ID = "(SELECT id FROM corral_threads WHERE name = :thread)"
_DELETE = (
    f"DELETE FROM corral_pending WHERE thread = {_ID}",
    f"DELETE FROM corral_items WHERE thread = {_ID}",
    f"DELETE FROM corral_checkpoints WHERE thread = {_ID}",
    "DELETE FROM corral_threads WHERE name = :thread",
)


class ThreadInfo(NamedTuple):
    """What was recorded about one thread."""

    thread_id: str
    graph: str | None
    """The graph its owner runs it with (set once: the graph of its first run)."""
    metadata: dict[str, Any]
    created_at: float
    """Unix time."""
    updated_at: float


class ThreadInfoStore:
    """The thread records and ``delete_thread`` of :class:`~corral.checkpoint._store.Store`."""

    sql: Any
    _transaction: Callable[..., AbstractContextManager[Any]]

    def add_thread_info(self, thread_id: str, metadata: dict[str, Any]) -> tuple[ThreadInfo, bool]:
        """Record the thread with ``metadata``; return its record and whether it is new (a
        thread recorded before is left as it is)."""
        check_thread_id(thread_id)
        params = {"thread": thread_id, "metadata": _dumps(metadata), "now": time.time()}
        with self._transaction("record a thread in", read=False) as db:
            new = db.execute(self.sql(_ADD), params).fetchone() is not None
            return _info(db.execute(self.sql(_ONE), params).fetchone()), new

    def update_thread_info(
        self, thread_id: str, metadata: dict[str, Any] | None = None, graph: str | None = None
    ) -> ThreadInfo | None:
        """Merge ``metadata`` into the thread's, set its graph if it has none, note the time;
        return the record (``None``: the thread was never recorded)."""
        check_thread_id(thread_id)
        params = {"thread": thread_id, "graph": graph, "now": time.time()}
        with self._transaction("update a thread in", read=False) as db:
            row = db.execute(self.sql(_TOUCH), params).fetchone()
            if row is None:
                return None
            found = _info(row)
            if metadata:
                found = found._replace(metadata={**found.metadata, **metadata})
                db.execute(self.sql(_SET), {**params, "metadata": _dumps(found.metadata)})
        return found

    def thread_info(self, thread_id: str) -> ThreadInfo | None:
        """Return what was recorded about the thread (``None``: nothing)."""
        check_thread_id(thread_id)
        with self._transaction("read a thread from", read=True) as db:
            row = db.execute(self.sql(_ONE), {"thread": thread_id}).fetchone()
        return None if row is None else _info(row)

    def thread_infos(self) -> list[ThreadInfo]:
        """Return every recorded thread, the most recently changed first."""
        with self._transaction("read threads from", read=True) as db:
            rows = db.execute(self.sql(_ALL)).fetchall()
        return sorted(map(_info, rows), key=lambda t: (-t.updated_at, t.thread_id))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread: its checkpoints, their stored values and its record. A thread
        the store does not hold is no error (as LangGraph's ``delete_thread``)."""
        check_thread_id(thread_id)
        with self._transaction(f"delete thread {thread_id!r} from", read=False) as db:
            for statement in _DELETE:
                db.execute(self.sql(statement), {"thread": thread_id})


def _dumps(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, default=str)


def _info(row: Any) -> ThreadInfo:
    name, graph, metadata, created, updated = row
    return ThreadInfo(str(name), graph, json.loads(metadata), float(created), float(updated))
