"""Writing a checkpoint in one statement: its rows numbered ahead by this process.

A put appends value rows and then the checkpoint row to ``checkpoints``; the checkpoint's
texts refer to the values by ``seq``. Inserted one by one, each value's ``seq`` comes back
from SQLite, and the put needs a transaction around several statements (``BEGIN
IMMEDIATE``, one ``INSERT`` per value, the checkpoint's, ``COMMIT``). A process that put the
file's last row knows the next ``seq``, as long as no other process wrote since: it numbers
the rows itself (:class:`RowsAhead`) and writes them all with one multi-row ``INSERT``,
which SQLite runs as one transaction of its own. If another process did write meanwhile,
the first ``seq`` is taken: the ``INSERT`` fails as a whole on the primary key (nothing is
written) and the saver puts the checkpoint the long way. The compare-and-set triggers run
inside that one statement as they do inside the long way's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

from corral.checkpoint.sqlite._schema import INSERT_VALUE, execute_patiently, transaction

__all__ = ["RowsAhead", "numbered_insert", "store_in", "taken_seq"]

_ONE_STATEMENT: Final = 100
"""Value rows a one-statement put holds at most (SQLite limits the parameters of one
statement); a put with more inserts them with explicit seqs in one transaction."""


class RowsAhead:
    """The ``store`` of a :class:`~corral.checkpoint.sqlite.packing.Packer` that numbers
    value rows from ``start`` and keeps them for :func:`numbered_insert`."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.texts: list[str] = []

    def store(self, text: str) -> int:
        self.texts.append(text)
        return self.start + len(self.texts) - 1

    @property
    def checkpoint_seq(self) -> int:
        """The seq of the checkpoint row, after the value rows."""
        return self.start + len(self.texts)


def numbered_insert(
    conn: sqlite3.Connection, rows: RowsAhead, checkpoint: tuple[Any, ...], timeout_s: float
) -> None:
    """Insert the value rows and the checkpoint row (``thread, checkpoint_id, parent,
    snapshot, writes, meta, meta_is_delta``) with the seqs ``rows`` gave them, atomically,
    waiting up to ``timeout_s`` for another process's transaction.

    Raises:
        sqlite3.IntegrityError: a seq is taken (another process wrote), the trigger refused
            a stale parent, or the checkpoint id is taken; nothing was written.
    """
    values = [x for i, text in enumerate(rows.texts) for x in (rows.start + i, text)]
    if len(rows.texts) <= _ONE_STATEMENT:
        params = [*values, rows.checkpoint_seq, *checkpoint]
        execute_patiently(conn, timeout_s, _insert(len(rows.texts)), params)
        return
    with transaction(conn, timeout_s=timeout_s):
        conn.executemany(_VALUE_AT, zip(values[::2], values[1::2], strict=True))
        conn.execute(_insert(0), [rows.checkpoint_seq, *checkpoint])


def store_in(conn: sqlite3.Connection) -> Callable[[str], int]:
    """Return the ``store`` of a Packer inserting value rows through ``conn`` one by one."""

    def store(text: str) -> int:
        blob_id = conn.execute(INSERT_VALUE, (text,)).lastrowid
        assert blob_id is not None
        return blob_id

    return store


def taken_seq(exc: sqlite3.IntegrityError) -> bool:
    """Return whether an insert failed because a numbered seq was taken."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_CONSTRAINT_PRIMARYKEY" or (
        "checkpoints.seq" in str(exc)
    )


_VALUE_AT: Final = "INSERT INTO checkpoints (seq, data) VALUES (?, ?)"


@lru_cache(maxsize=_ONE_STATEMENT + 1)
def _insert(values: int) -> str:
    """Return the one-statement insert of ``values`` value rows and one checkpoint row."""
    rows = ["(?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?)"] * values
    rows.append("(?, ?, ?, ?, ?, ?, ?, ?, NULL)")
    return (
        "INSERT INTO checkpoints (seq, thread, checkpoint_id, parent, snapshot, writes, meta, "
        "meta_is_delta, data) VALUES " + ", ".join(rows)
    )
