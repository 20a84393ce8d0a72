"""The tables of a corral SQLite file (layout 6), their triggers, and upgrading older ones.

One step, one leaf page. A thread's rows are numbered in a range of ``seq`` of its own,
``2**32`` wide: the first thread of a file from 1, the next from ``2**32``, and so on
(:func:`range_start`; in a file upgraded from layout 3 the ranges start one further on,
above the rows already there). A put appends its value rows and its checkpoint row to the
end of its thread's range, so one step of a thread writes one page of the table, and the
thread's newest checkpoint is its last row that is not a value row: no pointer row is
updated per step (layout 3 kept one in ``threads``, a third page written by every put).

Checkpoint ids are indexed in batches (layout 4 had a unique index on ``(thread,
checkpoint_id)``, a second page written by every put). A thread's range is cut in blocks
of :data:`BATCH` ``seq``; ``ids`` maps ``(thread, checkpoint_id)`` to ``seq`` for every
checkpoint row of the blocks before the block of the thread's last row. The rows of that
last block, the thread's *tail*, are found by a scan of at most ``BATCH`` rows. Rows are
numbered without gaps (the writer numbers them, see ``_writing``), so every block's first
row is written once, and its ``AFTER INSERT`` trigger (``ids_batch``) copies the checkpoint
rows of the block before into ``ids``, in the same transaction: one page of ``ids`` every
``BATCH`` rows (eight supersteps of one message) instead of one page every put. A
checkpoint is found by id with one seek of ``ids``, else a scan of the tail
(:data:`SEQ_OF`); a crash cannot separate a block's first row from its copy (one
transaction), and rows not yet copied are the tail, found by the scan.

The compare-and-set is a trigger on the checkpoint row's ``INSERT`` (``put_checks``): its
parent must be the thread's newest and its id new to the thread (not in ``ids``, nor in the
rows not yet copied there). One scan serves both: the rows from the start of the block
before the new row (or from the parent, if earlier) hold every uncopied row and every
checkpoint after the parent. ``threads.newest`` overrides "the last row" where set: in a
file upgraded from layout 3 it names each old thread's newest until the thread's first new
put, and a fork sets it to the fork's parent (after checking the newest it read) inside the
fork's transaction; the row's trigger clears it again.

Value rows are folded into ``runs`` at snapshot puts (layout 6, see
:mod:`~corral.checkpoint.sqlite._runs`): a snapshot put inserts its rows into the view
``put_fold``, whose trigger inserts them into ``checkpoints`` and folds.

Upgrading (:func:`upgrade`, in the opener's write transaction): layout 2 gains the pointer,
3 the ranges, 4 the ``ids`` table (filled with every checkpoint already there; a later copy
skips the ids already in it) and loses the unique index, 5 the ``runs`` table and the fold.
A corral that writes layout 5 or older refuses a file of layout 6 (its version is newer
than it reads).

Layout 6 as first built had the fold as an ``AFTER INSERT`` trigger of ``checkpoints``
(:func:`fold_on_table`); the opener moves it to ``put_fold`` and the version stays 6:
both forms are read alike, and a corral of the first form that writes to a moved file
only folds nothing (it inserts into ``checkpoints``, checked by the same triggers), so a
thread it writes is read from rows until a later snapshot of this corral folds them, at
most :data:`~corral.checkpoint.sqlite._runs.WINDOW` a snapshot.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from corral.checkpoint.sqlite._runs import BLOBS, PUT_FOLD, RUNS, compact, fold_trigger

__all__ = [
    "BATCH",
    "CHAIN",
    "LAST_ROW",
    "LAST_SEQ",
    "NEWEST",
    "NEWEST_ID",
    "PENDING",
    "ROW",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SEQ_OF",
    "STALE",
    "THREAD_ROWS",
    "THREAD_BITS",
    "first_range",
    "fold_on_table",
    "newest_params",
    "range_start",
    "upgrade",
]

SCHEMA_VERSION: Final = 6
"""The layout version this corral writes (it reads and upgrades 2, 3, 4 and 5)."""
THREAD_BITS: Final = 32
"""A thread's range of ``seq`` is ``2**THREAD_BITS`` wide."""
LAST_SEQ: Final = (1 << THREAD_BITS) - 1
"""The last offset in a thread's range."""
BATCH: Final = 16
"""Rows of a block: the first row of each copies the ids of the block before into ``ids``
(a power of two; measured best of 8, 16 and 32)."""

PENDING: Final = """
CREATE TABLE IF NOT EXISTS pending_writes (
    thread INT NOT NULL,
    seq INT NOT NULL,
    task INT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (thread, seq, task)
) WITHOUT ROWID
"""
"""Finished tasks of a superstep whose checkpoint is not written yet (created in older files)."""


def _newest(thread: str, low: str) -> str:
    """Return the SQL of the thread's newest checkpoint's seq: ``threads.newest`` when set,
    else the last row of the range from ``low`` that is not a value row (so a damaged
    newest row is found, and named when read, rather than skipped)."""
    return (
        f"coalesce((SELECT newest FROM threads WHERE id = {thread}), (SELECT seq FROM "
        f"checkpoints WHERE seq BETWEEN {low} AND {low} + {LAST_SEQ} AND data IS NULL "
        "ORDER BY seq DESC LIMIT 1))"
    )


STALE: Final = "corral: the parent is not the newest checkpoint, or the id is taken"
"""The message of the trigger that refuses a stale parent or an id the thread has (the
saver tells which: the trigger's program stays small)."""


def _triggers(first: int) -> tuple[str, str, str]:
    """Return the compare-and-set triggers and the copy of ids of a file whose first
    thread's range is ``first`` (0 or 1, baked into the triggers so that a put reads nothing
    more)."""
    low = f"(NEW.thread - {1 - first}) << {THREAD_BITS}"
    parent = "ifnull(NEW.parent, 0)"
    # From the block before the new row's (its rows may not be copied yet), or the
    # parent's next row if earlier, to the row before the new one; a checkpoint row after
    # the parent is a newer checkpoint unless the pointer overrides the last row. The
    # thread's row is read once: the scan is inside its EXISTS.
    scanned = (
        f"FROM checkpoints WHERE seq BETWEEN max({low}, min((NEW.seq - 1) & {-BATCH}, "
        f"{parent} + 1)) AND NEW.seq - 1 AND data IS NULL"
    )
    pointer_stale = f"coalesce(t.newest, {parent}) IS NOT {parent}"
    newer = f"(seq > {parent} AND t.newest IS NULL)"
    taken = "checkpoint_id = NEW.checkpoint_id"
    refuse = f"""
CREATE TRIGGER IF NOT EXISTS put_checks BEFORE INSERT ON checkpoints
WHEN NEW.thread IS NOT NULL AND (
    EXISTS (SELECT 1 FROM threads t WHERE t.id = NEW.thread AND ({pointer_stale}
        OR EXISTS (SELECT 1 {scanned} AND ({newer} OR {taken}))))
    OR EXISTS (SELECT 1 FROM ids WHERE thread = NEW.thread AND {taken}))
BEGIN
    SELECT RAISE(ABORT, '{STALE}');
END
"""
    # Clearing the pointer writes nothing when it is not set (the usual put).
    done = """
CREATE TRIGGER IF NOT EXISTS put_done AFTER INSERT ON checkpoints
WHEN NEW.thread IS NOT NULL
BEGIN
    UPDATE threads SET newest = NULL WHERE id = NEW.thread AND newest IS NOT NULL;
    DELETE FROM pending_writes WHERE thread = NEW.thread AND seq = NEW.parent;
END
"""
    # Any row, value or checkpoint, may start a block; ids copied at the upgrade are skipped.
    copy = f"""
CREATE TRIGGER IF NOT EXISTS ids_batch AFTER INSERT ON checkpoints
WHEN NEW.seq & {BATCH - 1} = 0
BEGIN
    INSERT OR IGNORE INTO ids SELECT thread, checkpoint_id, seq FROM checkpoints
    WHERE seq BETWEEN NEW.seq - {BATCH} AND NEW.seq - 1
        AND thread = (NEW.seq >> {THREAD_BITS}) + {1 - first};
END
"""
    return refuse, done, copy


IDS: Final = """
CREATE TABLE ids (
    thread INT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    seq INT NOT NULL,
    PRIMARY KEY (thread, checkpoint_id)
) WITHOUT ROWID
"""
"""The checkpoint ids of each thread's rows before its last block (see the module's
docstring)."""


_SCHEMA: Final = (
    """
CREATE TABLE corral_schema (
    version INT NOT NULL,
    written_by TEXT NOT NULL,
    first_range INT NOT NULL DEFAULT 1
)""",
    """
CREATE TABLE threads (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    newest INT
)""",
    """
CREATE TABLE checkpoints (
    seq INTEGER PRIMARY KEY,
    thread INT REFERENCES threads (id),
    checkpoint_id TEXT,
    parent INT,
    snapshot TEXT,
    writes TEXT,
    meta TEXT,
    meta_is_delta INT,
    data TEXT,
    CHECK ((thread IS NULL) = (data IS NOT NULL))
)""",
    IDS,
    RUNS,
    BLOBS,
    PENDING,
    *_triggers(0),
    PUT_FOLD,
    fold_trigger(THREAD_BITS),
)
SCHEMA: Final = tuple(map(compact, _SCHEMA))
"""A new file (``corral_schema`` gets its row, with ``first_range`` 0, from the opener), its
statements compacted (:func:`~corral.checkpoint.sqlite._runs.compact`; its integer columns
that are no row ids typed ``INT``, the same affinity as ``INTEGER``): its schema fits one
page, 20 bytes to spare."""

_FROM_2: Final = (
    "ALTER TABLE threads ADD COLUMN newest INTEGER",
    "UPDATE threads SET newest = (SELECT max(seq) FROM checkpoints WHERE thread = threads.id)",
)
"""Layout 2 to 3: the newest-checkpoint pointer."""
_FROM_3: Final = (
    PENDING,
    "ALTER TABLE corral_schema ADD COLUMN first_range INTEGER NOT NULL DEFAULT 1",
    "DROP TRIGGER IF EXISTS newest_only",
    "DROP TRIGGER IF EXISTS becomes_newest",
)
"""Layout 3 to 4: the rows already there keep their numbers (below the first range, as
``first_range`` is 1) and each thread its pointer, its newest until its first new put."""
_FROM_4: Final = (
    IDS,
    "INSERT INTO ids SELECT thread, checkpoint_id, seq FROM checkpoints WHERE thread IS NOT NULL",
    "DROP TRIGGER IF EXISTS parent_is_newest",
    "DROP INDEX IF EXISTS checkpoint_ids",
)
"""Layout 4 to 5: every checkpoint already there is in ``ids``, and the unique index goes
(``put_done`` stays as it was)."""
_FROM_5: Final = (RUNS, "DROP VIEW IF EXISTS blobs", BLOBS)
"""Layout 5 to 6: ``runs`` (empty: a thread's rows fold from its next snapshot on, see
:mod:`~corral.checkpoint.sqlite._runs`) and ``blobs`` showing the folded values too."""
_FOLD_ON_TABLE: Final = (
    "SELECT 1 FROM sqlite_schema WHERE type = 'trigger' AND name = 'fold' "
    "AND tbl_name = 'checkpoints'"
)


def upgrade(conn: sqlite3.Connection, version: int) -> None:
    """Bring a file of layout ``version`` (2 to 5, or 6 with :func:`fold_on_table`) to this
    layout, inside the caller's write transaction. Every corral process using a file of
    layout 5 or older must be of this version."""
    steps = (
        *(_FROM_2 if version == 2 else ()),
        *(_FROM_3 if version <= 3 else ()),
        *(_FROM_4 if version <= 4 else ()),
        *(_FROM_5 if version <= 5 else ()),
    )
    for statement in steps:
        conn.execute(compact(statement))
    triggers = _triggers(first_range(conn)) if version <= 5 else ()
    for statement in (*triggers, "DROP TRIGGER IF EXISTS fold", PUT_FOLD):
        conn.execute(compact(statement))
    conn.execute(compact(fold_trigger(THREAD_BITS)))
    conn.execute("UPDATE corral_schema SET version = ?", (SCHEMA_VERSION,))


def fold_on_table(conn: sqlite3.Connection) -> bool:
    """Return whether the file is of layout 6 as first built: its fold a trigger of
    ``checkpoints``, which every put's ``INSERT`` carries (:func:`upgrade` moves it)."""
    return conn.execute(_FOLD_ON_TABLE).fetchone() is not None


def first_range(conn: sqlite3.Connection) -> int:
    """Return the range of the file's first thread (0, or 1 in a file upgraded from layout
    3; a read-only layout-3 file has no column and all its threads have pointers)."""
    try:
        row = conn.execute("SELECT first_range FROM corral_schema").fetchone()
    except sqlite3.OperationalError:
        return 1
    return 1 if row is None or type(row[0]) is not int else int(row[0])


def range_start(thread: int, first: int) -> int:
    """Return the first ``seq`` of ``thread``'s range (whose first row is one further)."""
    return (thread - 1 + first) << THREAD_BITS


def newest_params(thread: int, first: int) -> dict[str, int]:
    """Return the parameters of :data:`NEWEST`, :data:`NEWEST_ID` and :data:`THREAD_ROWS`
    for ``thread``."""
    return {"thread": thread, "low": range_start(thread, first)}


NEWEST: Final = f"SELECT {_newest(':thread', ':low')}"
"""The seq of the newest checkpoint of ``:thread`` (``None`` when it has none); ``:low``
is :func:`range_start`."""

NEWEST_ID: Final = f"SELECT checkpoint_id FROM checkpoints WHERE seq = {_newest(':thread', ':low')}"

LAST_ROW: Final = (
    f"SELECT seq FROM checkpoints WHERE seq BETWEEN :low AND :low + {LAST_SEQ} "
    "ORDER BY seq DESC LIMIT 1"
)
"""The seq of the last row (checkpoint or value) in the range from ``:low``."""

ROW: Final = """
SELECT k.seq, k.checkpoint_id, p.checkpoint_id, k.snapshot, k.writes, k.meta, k.meta_is_delta
FROM checkpoints AS k LEFT JOIN checkpoints AS p ON p.seq = k.parent
"""

CHAIN: Final = """
WITH RECURSIVE up(seq, parent, stop) AS (
    SELECT seq, parent, snapshot IS NOT NULL OR parent IS NULL
    FROM checkpoints WHERE seq = :seq AND thread = :thread
    UNION ALL
    SELECT c.seq, c.parent, c.snapshot IS NOT NULL OR c.parent IS NULL
    FROM checkpoints AS c JOIN up ON c.seq = up.parent AND c.seq < up.seq AND c.thread = :thread
    WHERE NOT up.stop
)
""" + ROW.replace(
    "FROM checkpoints AS k",
    "FROM up JOIN checkpoints AS k ON k.seq = up.seq AND k.thread = :thread",
)

SEQ_OF: Final = f"""
SELECT coalesce((SELECT seq FROM ids WHERE thread = :thread AND checkpoint_id = :id), (
    SELECT seq FROM checkpoints WHERE seq BETWEEN ({LAST_ROW}) & {-BATCH} AND :low + {LAST_SEQ}
    AND thread = :thread AND checkpoint_id = :id))
"""
"""The seq of the checkpoint ``:id`` of ``:thread`` (``None`` when it has none): one seek
of ``ids``, else a scan of the block of the thread's last row (at most :data:`BATCH` rows)."""

THREAD_ROWS: Final = (
    ROW
    + f"""
WHERE (k.seq BETWEEN :low AND :low + {LAST_SEQ}
    OR k.seq IN (SELECT seq FROM ids WHERE thread = :thread AND seq < :low))
AND k.thread = :thread ORDER BY k.seq
"""
)
"""Every checkpoint row of ``:thread``, oldest first: its range (a file upgraded from
layout 3 holds older rows below the ranges, found through ``ids``)."""
