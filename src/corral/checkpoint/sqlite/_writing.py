"""Writing a checkpoint in one statement: its rows numbered ahead by this process.

A put appends value rows and then the checkpoint row to its thread's range of
``checkpoints`` (``seq`` from ``thread << 32``); the checkpoint's texts refer to the values
by ``seq``. The saver always numbers the rows itself (:class:`RowsAhead`). The long way
reads the thread's last ``seq`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``. A process that
put the thread's last row knows the next ``seq``, as long as no other process wrote to
that thread since: it writes all the rows with one multi-row ``INSERT``, which SQLite runs
as one transaction of its own. If another process did write meanwhile, the first ``seq``
is taken: the ``INSERT`` fails as a whole on the primary key (nothing is written) and the
saver puts the checkpoint the long way. The compare-and-set triggers run inside that one
statement as they do inside the long way's transaction. A snapshot put inserts into the view
``put_fold`` instead, whose trigger inserts the rows and folds (see ``_runs``).
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Any, Final

from corral.checkpoint.sqlite._layout import LAST_ROW, LAST_SEQ, THREAD_BITS
from corral.checkpoint.sqlite._schema import execute_patiently, transaction
from corral.errors import CheckpointError

__all__ = [
    "RowsAhead",
    "check_room",
    "insert_record",
    "insert_rows",
    "next_seq",
    "numbered_insert",
    "taken_seq",
]

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
    texts, start, snapshot = rows.texts, rows.start, checkpoint[3] is not None
    if len(texts) == 1 and not snapshot:  # the usual step: one new value (a node's message)
        params: Any = (start, texts[0], start + 1, *checkpoint)
        execute_patiently(conn, timeout_s, _INSERT_ONE, params)
        return
    if len(texts) <= _ONE_STATEMENT:
        values = [x for i, text in enumerate(texts) for x in (start + i, text)]
        params = [*values, start + len(texts), *checkpoint]
        execute_patiently(conn, timeout_s, _insert(len(texts), snapshot), params)
        return
    with transaction(conn, timeout_s=timeout_s):
        insert_rows(conn, rows, checkpoint)


def insert_rows(
    conn: sqlite3.Connection, rows: RowsAhead, checkpoint: tuple[Any, ...] | None
) -> None:
    """Insert the value rows of ``rows`` and then ``checkpoint``'s row, if any, inside the
    caller's transaction."""
    snapshot = checkpoint is not None and checkpoint[3] is not None
    if checkpoint is not None and len(rows.texts) <= _ONE_STATEMENT:
        values = [x for i, text in enumerate(rows.texts) for x in (rows.start + i, text)]
        insert = _insert(len(rows.texts), snapshot)
        conn.execute(insert, [*values, rows.checkpoint_seq, *checkpoint])
        return
    conn.executemany(_VALUE_AT, [(rows.start + i, text) for i, text in enumerate(rows.texts)])
    if checkpoint is not None:
        conn.execute(_insert(0, snapshot), [rows.checkpoint_seq, *checkpoint])


def insert_record(conn: sqlite3.Connection, rows: RowsAhead, record: tuple[Any, ...]) -> None:
    """Insert the value rows of ``rows`` and a finished task's ``(thread, seq, task,
    record)`` in ``pending_writes`` (replacing an earlier record of the task), inside the
    caller's transaction."""
    insert_rows(conn, rows, None)
    conn.execute(_RECORD, record)


_RECORD: Final = (
    "INSERT OR REPLACE INTO pending_writes (thread, seq, task, record) VALUES (?, ?, ?, ?)"
)


def next_seq(conn: sqlite3.Connection, low: int) -> int:
    """Return the ``seq`` after the last row of the thread's range from ``low`` (read
    inside the write transaction, so nobody takes it meanwhile)."""
    row = conn.execute(LAST_ROW, {"low": low}).fetchone()
    return low + 1 if row is None else int(row[0]) + 1


def check_room(path: str, thread_id: str, low: int, rows: RowsAhead) -> None:
    """Refuse rows past the end of the thread's range from ``low``, or a range past the
    last (4 billion rows a thread, 2 billion threads: never in practice)."""
    if low >> THREAD_BITS >= _THREADS:
        msg = f"{path!r} holds {_THREADS} threads, all this layout numbers; use a new file"
        raise CheckpointError(msg, path=path)
    if rows.checkpoint_seq - low > LAST_SEQ:
        msg = (
            f"thread {thread_id!r} in {path!r} holds {LAST_SEQ} rows, all this layout numbers "
            "for one thread; continue in a new thread"
        )
        raise CheckpointError(msg, path=path)


_THREADS: Final = 1 << (63 - THREAD_BITS)
"""Threads a file can number (a seq is a signed 64-bit integer)."""


def taken_seq(exc: sqlite3.IntegrityError) -> bool:
    """Return whether an insert failed because a numbered seq was taken."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_CONSTRAINT_PRIMARYKEY" or (
        "checkpoints.seq" in str(exc)
    )


_VALUE_AT: Final = "INSERT INTO checkpoints (seq, data) VALUES (?, ?)"


@lru_cache(maxsize=2 * (_ONE_STATEMENT + 1))
def _insert(values: int, snapshot: bool = False) -> str:
    """Return the one-statement insert of ``values`` value rows and one checkpoint row (into
    ``put_fold``, which folds, for a ``snapshot`` checkpoint)."""
    rows = ["(?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?)"] * values
    rows.append("(?, ?, ?, ?, ?, ?, ?, ?, NULL)")
    return (
        f"INSERT INTO {'put_fold' if snapshot else 'checkpoints'} (seq, thread, "
        "checkpoint_id, parent, snapshot, writes, meta, meta_is_delta, data) VALUES "
        + ", ".join(rows)
    )


_INSERT_ONE: Final = _insert(1)
