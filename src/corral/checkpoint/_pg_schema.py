"""The PostgreSQL layout of corral: creating and checking it, and naming driver errors.

``corral_schema`` holds one row, the layout version. Opening runs in one transaction holding
an advisory lock, so processes that open a fresh database at once create it exactly once; a
database of another layout is refused (never rewritten).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from corral.checkpoint._tables import CREATE_POSTGRES, written_by
from corral.checkpoint._thread_info import add_info_columns
from corral.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION: Final = 2
"""The layout version this corral writes and reads: the tables of
:mod:`corral.checkpoint._tables`."""

SCHEMA_LOCK: Final = 0x4352524C
"""The advisory lock key taken while creating or migrating tables ("CRRL")."""


def ensure_schema(conn: psycopg.Connection[Any], where: str) -> None:
    """Create corral's tables in a fresh database, or check (and migrate) an existing one.

    Raises:
        CheckpointError: the database holds a newer layout, or a damaged one.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        exists = conn.execute("SELECT to_regclass('corral_schema') IS NOT NULL").fetchone()
        if not (exists and exists[0]):
            conn.execute(
                "CREATE TABLE corral_schema (version integer NOT NULL, written_by text NOT NULL)"
            )
            for statement in CREATE_POSTGRES:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO corral_schema VALUES (%s, %s)",
                (SCHEMA_VERSION, written_by()),
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
        if version != SCHEMA_VERSION:
            newer = version > SCHEMA_VERSION
            how = "upgrade corral" if newer else "finish its threads with the corral that wrote it"
            msg = (
                f"{where!r} holds checkpoints in layout version {version} (written by "
                f"{writer}); this corral reads version {SCHEMA_VERSION}: {how}, or use "
                "another database or schema"
            )
            raise CheckpointError(msg, path=where)
        present = conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'corral_threads'"
        ).fetchall()
        add_info_columns(conn, {str(name) for (name,) in present}, postgres=True)


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
    if host.startswith("/"):
        return f"postgresql:///{dbname}?host={host}"
    return f"postgresql://{host}{f':{port}' if port else ''}/{dbname}"


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
