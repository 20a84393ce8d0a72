"""The tables of corral's store and the statements on them, shared by SQLite and PostgreSQL.

Four tables, the same in both databases (only column types differ): a row per thread
(``newest``: the compare-and-set pointer; the run that holds it, ``holder`` in process
``held_by`` until ``held_until``; what its owner recorded: :mod:`._thread_info`), a row per
checkpoint (its JSON texts; ``seq`` orders a thread's checkpoints as they were put), a row
per large value stored once (an *item*) and a row per finished task of a superstep not yet
checkpointed. Every row carries
its thread's row id, so a thread is deleted by one ``DELETE`` per table, and facts about a
thread (metadata, its last run's status) belong in ``corral_threads``. The worker queue
(``corral_runs``) lives in the same database; :mod:`corral.workers` creates and owns it.

Statements are written once, with ``:name`` parameters (SQLite's style); :func:`for_psycopg`
turns them into psycopg's ``%(name)s``. Both databases accept every statement here
(``ON CONFLICT``, ``RETURNING`` and recursive ``WITH`` are in SQLite since 3.35); they
differ only in how a JSON array of ids is read (:data:`ITEMS_SQLITE`, :data:`ITEMS_POSTGRES`).
"""

from __future__ import annotations

import re
from typing import Any, Final

from corral.errors import CheckpointError

_TABLES: Final = """
CREATE TABLE corral_threads (
    id {thread_id},
    name TEXT NOT NULL UNIQUE,
    newest TEXT NOT NULL,
    holder TEXT,
    held_by TEXT,
    held_until {real},
    graph TEXT,
    metadata TEXT,
    created_at {real},
    updated_at {real}
);
CREATE TABLE corral_checkpoints (
    seq {id},
    thread {int} NOT NULL,
    checkpoint_id TEXT NOT NULL,
    parent_id TEXT,
    snapshot TEXT,
    writes TEXT NOT NULL,
    meta TEXT NOT NULL,
    UNIQUE (thread, checkpoint_id)
);
CREATE TABLE corral_items (
    id {id},
    thread {int} NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE corral_pending (
    thread {int} NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (thread, checkpoint_id, task)
)
"""


def create_tables(postgres: bool) -> list[str]:
    """Return the statements that make the tables of a new store (``corral_schema`` is the
    opener's). A thread's row id is never used again, in SQLite as in PostgreSQL: a saver's
    memory of the items stored by a thread (by row id) must not apply to a thread made after
    it was deleted."""
    key = "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    tables = _TABLES.format(
        id=key if postgres else "INTEGER PRIMARY KEY",
        thread_id=key if postgres else "INTEGER PRIMARY KEY AUTOINCREMENT",
        int="bigint" if postgres else "INTEGER",
        real="double precision" if postgres else "REAL",
    )
    return [statement.strip() for statement in tables.split(";")]


THREAD: Final = "SELECT id, newest FROM corral_threads WHERE name = :thread AND newest <> ''"
"""The thread's row, once it has a checkpoint (``newest = ''``: recorded, none yet)."""
THREADS: Final = "SELECT name FROM corral_threads WHERE newest <> '' ORDER BY id"

PUT_FIRST: Final = """
INSERT INTO corral_threads (name, newest, holder, held_by, held_until)
VALUES (:thread, :id, :holder, :held_by, :held_until)
ON CONFLICT (name) DO UPDATE SET newest = excluded.newest, holder = excluded.holder,
    held_by = excluded.held_by, held_until = excluded.held_until
WHERE corral_threads.newest = ''
RETURNING id, 0
"""
"""The compare-and-set of a thread's first checkpoint (no row back: the thread has one).
A thread recorded before its first checkpoint has the row, with ``newest = ''``."""

PUT_NEXT: Final = """
UPDATE corral_threads SET newest = :id, holder = :holder, held_by = :held_by,
    held_until = :held_until
WHERE name = :thread AND newest = :expected
    AND (holder IS NULL OR holder = :run OR holder = :lapsed)
    AND NOT EXISTS (SELECT 1 FROM corral_checkpoints AS c
        WHERE c.thread = corral_threads.id AND c.checkpoint_id = :id)
    AND (CAST(:parent AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM corral_checkpoints AS c
        WHERE c.thread = corral_threads.id AND c.checkpoint_id = :parent))
RETURNING id, EXISTS (SELECT 1 FROM corral_pending AS p
    WHERE p.thread = corral_threads.id AND p.checkpoint_id = :parent)
"""
"""The compare-and-set of every later checkpoint (no row back: the newest is another,
another run holds the thread, the id is taken, or the parent is unknown: a fork's may be
any; ``:lapsed`` names a holder found no longer live). Once it changed the row, the put's
inserts cannot conflict. In PostgreSQL the ``UPDATE`` locks the thread's row: a second
writer waits for the first to commit, then finds the new ``newest``. Its row (and
:data:`PUT_FIRST`'s): the thread's id, and whether :data:`DROP_PENDING` has work."""

HOLDER: Final = "SELECT holder, held_by, held_until FROM corral_threads WHERE name = :thread"
RELEASE: Final = """
UPDATE corral_threads SET holder = NULL, held_by = NULL, held_until = NULL
WHERE name = :thread AND holder = :run
"""

PUT_ITEM: Final = "INSERT INTO corral_items (thread, data) VALUES (:thread, :data) RETURNING id"

PUT_CHECKPOINT: Final = """
INSERT INTO corral_checkpoints (thread, checkpoint_id, parent_id, snapshot, writes, meta)
VALUES (:thread, :id, :parent, :snapshot, :writes, :meta)
"""

DROP_PENDING: Final = (
    "DELETE FROM corral_pending WHERE thread = :thread AND checkpoint_id = :parent"
)
"""A put supersedes the finished tasks recorded after its parent."""

REFUSED: Final = """
SELECT t.newest, t.holder, t.held_by, t.held_until,
    EXISTS (SELECT 1 FROM corral_checkpoints AS c
        WHERE c.thread = t.id AND c.checkpoint_id = :id),
    EXISTS (SELECT 1 FROM corral_checkpoints AS c
        WHERE c.thread = t.id AND c.checkpoint_id = :parent)
FROM corral_threads AS t WHERE t.name = :thread
"""
"""Why a compare-and-set changed nothing: the newest and its holder, the id taken?, the
parent known?"""

CHAIN: Final = """
WITH RECURSIVE up (seq, checkpoint_id, parent_id, stop) AS (
    SELECT seq, checkpoint_id, parent_id, snapshot IS NOT NULL OR parent_id IS NULL
    FROM corral_checkpoints WHERE thread = :thread AND checkpoint_id = :id
    UNION
    SELECT c.seq, c.checkpoint_id, c.parent_id, c.snapshot IS NOT NULL OR c.parent_id IS NULL
    FROM up JOIN corral_checkpoints AS c ON c.thread = :thread AND c.checkpoint_id = up.parent_id
    WHERE NOT up.stop
)
SELECT checkpoint_id, parent_id, snapshot, writes, meta FROM corral_checkpoints
WHERE seq IN (SELECT seq FROM up) ORDER BY seq
"""
"""The rows from ``:id`` up its parents to the nearest snapshot (or the thread's first).
``UNION``, not ``UNION ALL``: a loop of parents (damage) ends the walk, as a row met again
adds nothing; the caller checks that the rows link up and names a loop or a gap."""

THREAD_ROWS: Final = """
SELECT checkpoint_id, parent_id, snapshot, writes, meta FROM corral_checkpoints
WHERE thread = :thread ORDER BY seq
"""

ITEMS_SQLITE: Final = (
    "SELECT id, data FROM corral_items WHERE id IN (SELECT value FROM json_each(:ids))"
)
"""The stored items with the ids of ``:ids``, a JSON array."""
ITEMS_POSTGRES: Final = """
SELECT id, data FROM corral_items
WHERE id IN (SELECT CAST(json_array_elements_text(CAST(:ids AS json)) AS bigint))
"""

PUT_PENDING: Final = """
INSERT INTO corral_pending (thread, checkpoint_id, task, record)
SELECT c.thread, c.checkpoint_id, :task, :record
FROM corral_checkpoints AS c JOIN corral_threads AS t ON t.id = c.thread
WHERE t.name = :thread AND c.checkpoint_id = :id
ON CONFLICT (thread, checkpoint_id, task) DO UPDATE SET record = excluded.record
RETURNING task
"""
"""No row back: the thread has no checkpoint ``:id``."""
PENDING: Final = """
SELECT p.task, p.record FROM corral_pending AS p JOIN corral_threads AS t ON t.id = p.thread
WHERE t.name = :thread AND p.checkpoint_id = :id ORDER BY p.task
"""


LAYOUT: Final = "CREATE TABLE corral_schema (version INTEGER NOT NULL, written_by TEXT NOT NULL)"
"""The opener's table: one row, the store's layout version and the corral that wrote it."""


def ensure_layout(
    db: Any, where: str, *, postgres: bool, new: bool, reads: tuple[int, ...], older: str
) -> int:
    """Create the tables of a ``new`` store (layout ``reads[0]``), or check an existing one,
    in the caller's transaction; return the store's layout.

    An existing store's layout must be one of ``reads``; any other is refused by name
    (``older``: the way out for one older than this corral reads), the store left as it was.
    """
    if new:
        for statement in (LAYOUT, *create_tables(postgres)):
            db.execute(statement)
        insert = "INSERT INTO corral_schema VALUES (:version, :writer)"
        stored = {"version": reads[0], "writer": written_by()}
        db.execute(for_psycopg(insert) if postgres else insert, stored)
        return reads[0]
    try:
        row = db.execute("SELECT version, written_by FROM corral_schema").fetchone()
    except Exception as exc:  # the table is missing or unreadable: only damage does that
        row, problem = None, f" ({exc})"
    else:
        problem = ""
    if row is None:
        msg = (
            f"{where!r} is marked as corral's but has no readable layout version{problem}; it "
            "is damaged or was not written by corral: move it away, or use another one"
        )
        raise CheckpointError(msg, path=where)
    found, writer = row
    if found in reads:
        return int(found)
    if type(found) is int and found < min(reads):
        msg = f"{where!r} holds checkpoints in layout {found} (written by {writer}), {older}"
    else:
        msg = (
            f"{where!r} holds checkpoints in layout version {found!r} (written by {writer}); "
            f"this corral reads version {reads[0]}: use the corral version that wrote them, "
            "or another path or database"
        )
    raise CheckpointError(msg, path=where)


def written_by() -> str:
    """Return the writer a new or upgraded store records beside its layout version."""
    from importlib import metadata  # slow to import; only a new or upgraded store needs it

    try:
        return f"corral {metadata.version('corral')}"
    except metadata.PackageNotFoundError:
        return "corral (not installed)"


_PARAM: Final = re.compile(r"(?<![:\w]):(\w+)")


def for_psycopg(sql: str) -> str:
    """Return ``sql`` with its ``:name`` parameters in psycopg's ``%(name)s`` style.

    >>> for_psycopg("SELECT 1 FROM t WHERE a = :thread")
    'SELECT 1 FROM t WHERE a = %(thread)s'
    """
    return _PARAM.sub(r"%(\1)s", sql)
