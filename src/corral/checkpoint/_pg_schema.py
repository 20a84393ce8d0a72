"""The PostgreSQL layout of corral: its tables and statements, creating, checking, migrating.

Shared by :class:`~corral.checkpoint.postgres.PostgresSaver` and the durable run queue
(:mod:`corral.workers`), which live in the same database. ``corral_schema`` holds one row,
the layout version. Opening runs in one transaction holding an advisory lock, so processes
that open a fresh database at once create it exactly once; a database written by a newer
corral is refused (never rewritten), an older one is brought up to date by the steps in
``_MIGRATIONS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from corral.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CHAIN",
    "PUT_FIRST",
    "PUT_NEXT",
    "PUT_WRITES",
    "REFUSED",
    "ROW",
    "SCHEMA_VERSION",
    "ensure_schema",
    "error_for",
    "redact",
]

SCHEMA_VERSION: Final = 1
"""The layout version this corral writes and reads."""

_LOCK: Final = 0x4352524C
"""The advisory lock key taken while creating or migrating ("CRRL")."""

_CREATE: Final = """
CREATE TABLE corral_schema (version integer NOT NULL, written_by text NOT NULL);
CREATE TABLE corral_threads (
    id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    name text PRIMARY KEY,
    newest text NOT NULL
);
CREATE TABLE corral_checkpoints (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    thread text NOT NULL,
    checkpoint_id text NOT NULL,
    parent_id text,
    snapshot text,
    writes text NOT NULL,
    meta text NOT NULL,
    meta_is_delta boolean NOT NULL,
    PRIMARY KEY (thread, checkpoint_id)
);
CREATE INDEX corral_checkpoints_order ON corral_checkpoints (thread, seq);
CREATE SEQUENCE corral_blob_ids INCREMENT BY 1024;
CREATE TABLE corral_blobs (id bigint PRIMARY KEY, data text NOT NULL);
CREATE TABLE corral_pending (
    thread text NOT NULL,
    checkpoint_id text NOT NULL,
    task integer NOT NULL,
    record text NOT NULL,
    PRIMARY KEY (thread, checkpoint_id, task)
);
CREATE TABLE corral_runs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread text NOT NULL,
    input text,
    resume boolean NOT NULL DEFAULT false,
    status text NOT NULL DEFAULT 'queued',
    base text,
    owner text,
    lease_until timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    error text,
    submitted timestamptz NOT NULL DEFAULT now(),
    finished timestamptz
);
CREATE INDEX corral_runs_open ON corral_runs (id) WHERE status IN ('queued', 'running');
CREATE INDEX corral_runs_thread ON corral_runs (thread, id);
"""

_CHECKPOINT_COLUMNS = "thread, checkpoint_id, parent_id, snapshot, writes, meta, meta_is_delta"

_PUT_TAIL = f"""
, blobs AS (
    INSERT INTO corral_blobs (id, data)
    SELECT b.id, b.data FROM cas, unnest(%(blob_ids)s::bigint[], %(blob_texts)s::text[])
        AS b (id, data)
), row AS (
    INSERT INTO corral_checkpoints ({_CHECKPOINT_COLUMNS})
    SELECT %(thread)s, %(id)s, %(parent)s, %(snapshot)s, %(writes)s, %(meta)s, %(delta)s
    FROM cas RETURNING 1
), done AS (
    DELETE FROM corral_pending
    WHERE thread = %(thread)s AND checkpoint_id = %(parent)s AND EXISTS (SELECT 1 FROM cas)
)
SELECT count(*) FROM row
"""

PUT_NEXT = (
    """
WITH cas AS (
    UPDATE corral_threads SET newest = %(id)s
    WHERE name = %(thread)s AND newest = %(expected)s RETURNING name
)"""
    + _PUT_TAIL
)

PUT_FIRST = (
    """
WITH cas AS (
    INSERT INTO corral_threads (name, newest) VALUES (%(thread)s, %(id)s)
    ON CONFLICT (name) DO NOTHING RETURNING name
)"""
    + _PUT_TAIL
)

PUT_WRITES = """
WITH blobs AS (
    INSERT INTO corral_blobs (id, data)
    SELECT b.id, b.data FROM unnest(%(blob_ids)s::bigint[], %(blob_texts)s::text[]) AS b (id, data)
    WHERE EXISTS (
        SELECT 1 FROM corral_checkpoints WHERE thread = %(thread)s AND checkpoint_id = %(id)s)
)
INSERT INTO corral_pending (thread, checkpoint_id, task, record)
SELECT %(thread)s, %(id)s, %(task)s, %(record)s
WHERE EXISTS (SELECT 1 FROM corral_checkpoints WHERE thread = %(thread)s AND checkpoint_id = %(id)s)
ON CONFLICT (thread, checkpoint_id, task) DO UPDATE SET record = excluded.record
"""

REFUSED = """
SELECT t.newest,
    EXISTS (SELECT 1 FROM corral_checkpoints WHERE thread = %(t)s AND checkpoint_id = %(n)s),
    EXISTS (SELECT 1 FROM corral_checkpoints WHERE thread = %(t)s AND checkpoint_id = %(p)s)
FROM (SELECT 1) AS one LEFT JOIN corral_threads AS t ON t.name = %(t)s
"""

ROW = "seq, checkpoint_id, parent_id, snapshot, writes, meta, meta_is_delta"

CHAIN = f"""
WITH RECURSIVE up AS (
    SELECT {ROW}, snapshot IS NOT NULL OR parent_id IS NULL AS stop
    FROM corral_checkpoints
    WHERE thread = %(thread)s AND checkpoint_id = coalesce(
        %(id)s, (SELECT newest FROM corral_threads WHERE name = %(thread)s))
    UNION ALL
    SELECT c.seq, c.checkpoint_id, c.parent_id, c.snapshot, c.writes, c.meta, c.meta_is_delta,
        c.snapshot IS NOT NULL OR c.parent_id IS NULL
    FROM corral_checkpoints AS c JOIN up ON c.checkpoint_id = up.parent_id
    WHERE c.thread = %(thread)s AND NOT up.stop
)
SELECT {ROW} FROM up ORDER BY seq
"""

_MIGRATIONS: Final[dict[int, str]] = {}
"""``{version: SQL}``: the statements that bring version ``version - 1`` to ``version``."""


def ensure_schema(conn: psycopg.Connection[Any], where: str) -> None:
    """Create corral's tables in a fresh database, or check (and migrate) an existing one.

    Raises:
        CheckpointError: the database holds a newer layout, or a damaged one.
    """
    from corral import __version__

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        exists = conn.execute("SELECT to_regclass('corral_schema') IS NOT NULL").fetchone()
        if not (exists and exists[0]):
            conn.execute(_CREATE)
            conn.execute(
                "INSERT INTO corral_schema VALUES (%s, %s)",
                (SCHEMA_VERSION, f"corral {__version__}"),
            )
            return
        row = conn.execute("SELECT version, written_by FROM corral_schema").fetchone()
        if row is None:
            msg = (
                f"{where!r} has a corral_schema table without a version row; the database "
                "is damaged or was not written by corral: use another database or schema"
            )
            raise CheckpointError(msg, path=where)
        version, writer = int(row[0]), str(row[1])
        if version > SCHEMA_VERSION:
            msg = (
                f"{where!r} holds checkpoints in layout version {version} (written by "
                f"{writer}); this corral reads up to version {SCHEMA_VERSION}: upgrade corral"
            )
            raise CheckpointError(msg, path=where)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(_MIGRATIONS[step])
        if version < SCHEMA_VERSION:
            conn.execute(
                "UPDATE corral_schema SET version = %s, written_by = %s",
                (SCHEMA_VERSION, f"corral {__version__}"),
            )


def redact(conninfo: str) -> str:
    """Return a connection string without its password, to show in messages.

    >>> redact("postgresql://app:secret@db.example/agents")
    'postgresql://db.example/agents'
    """
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:
        return "<a PostgreSQL database>"
    host = str(parts.get("host") or "localhost")
    port = parts.get("port")
    dbname = parts.get("dbname") or parts.get("user") or ""
    shown = host if host.startswith("/") else host + (f":{port}" if port else "")
    return (
        f"postgresql://{shown}/{dbname}"
        if not host.startswith("/")
        else (f"postgresql:///{dbname}?host={shown}")
    )


def error_for(verb: str, where: str, exc: Exception) -> CheckpointError:
    """Return the ``CheckpointError`` for a driver error while doing ``verb``."""
    import psycopg

    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.OperationalError):
        if "does not exist" in first:
            how = "create the database (createdb) or fix the name in the URL"
        else:
            how = "check that the server runs, and the host, port and credentials"
        msg = f"cannot {verb} {where!r}: {first}; {how}"
    else:
        msg = f"cannot {verb} {where!r}: {first}"
    return CheckpointError(msg, path=where)
