"""Finding a thread's checkpoints by id, and listing them, in the file's layout.

A file of layout 5 or 6 finds an id in ``ids`` or by a scan of the thread's tail (see
:mod:`~corral.checkpoint.sqlite._layout`); an older file opened read-only (so never
upgraded) has no ``ids`` but its unique index on ``(thread, checkpoint_id)``, and one of
layout 5 or older no ``runs`` (its values are all rows).
"""

from __future__ import annotations

import sqlite3
from typing import Final, NamedTuple

from corral.checkpoint.sqlite._layout import NEWEST_ID, ROW, SEQ_OF, THREAD_ROWS, newest_params
from corral.checkpoint.sqlite._schema import execute_patiently

__all__ = ["CURRENT", "Lookups", "lookups", "newest_id", "seq_of"]


class Lookups(NamedTuple):
    """The queries of one file: ``:thread``, ``:low`` (its range start) and ``:id``."""

    seq_of: str
    """The seq of checkpoint ``:id`` of ``:thread`` (no row, or ``None``: it has none)."""
    thread_rows: str
    """Every checkpoint row of ``:thread`` (as ``ROW`` selects them), oldest first."""
    folded: bool = True
    """Whether the file has ``runs`` (layout 6): values may be folded there."""


CURRENT: Final = Lookups(SEQ_OF, THREAD_ROWS)
_INDEXED: Final = Lookups(
    "SELECT seq FROM checkpoints WHERE thread = :thread AND checkpoint_id = :id",
    ROW + " WHERE k.thread = :thread ORDER BY k.seq",
    folded=False,
)
"""The queries of layouts 2 to 4, which a file opened read-only may still be in."""


def lookups(conn: sqlite3.Connection) -> Lookups:
    """Return the queries for the file behind ``conn``."""
    query = "SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('ids', 'runs')"
    tables = {name for (name,) in conn.execute(query)}
    if "ids" not in tables:
        return _INDEXED
    return CURRENT if "runs" in tables else CURRENT._replace(folded=False)


def seq_of(
    conn: sqlite3.Connection, queries: Lookups, timeout_s: float, thread: int, low: int, cid: str
) -> int | None:
    """Return the seq of the thread's checkpoint ``cid`` (its range starts at ``low``), or
    ``None`` when it has none. It may run outside a transaction (before a one-statement
    put), so it may wait for another process's, up to ``timeout_s``."""
    params = {"thread": thread, "low": low, "id": cid}
    row = execute_patiently(conn, timeout_s, queries.seq_of, params).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def newest_id(conn: sqlite3.Connection, timeout_s: float, thread: int, first: int) -> str | None:
    """Return the id of ``thread``'s newest checkpoint (``first``: the file's first range),
    ``None`` when it has none; it may wait for another process's write, up to ``timeout_s``."""
    params = newest_params(thread, first)
    row = execute_patiently(conn, timeout_s, NEWEST_ID, params).fetchone()
    return None if row is None or row[0] is None else str(row[0])
