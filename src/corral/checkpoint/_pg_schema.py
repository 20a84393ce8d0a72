"""The PostgreSQL layout of corral: creating and checking it, and naming driver errors.

``corral_schema`` holds one row, the layout version. Opening runs in one transaction holding
an advisory lock, so processes that open a fresh database at once create it exactly once; a
database of another layout is refused (never rewritten).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from corral.checkpoint._tables import ensure_layout
from corral.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION: Final = 2
"""The layout version this corral writes and reads: the tables of
:mod:`corral.checkpoint._tables`."""

SCHEMA_LOCK: Final = 0x4352524C
"""The advisory lock key taken while creating or migrating tables ("CRRL")."""


def ensure_schema(conn: psycopg.Connection[Any], where: str) -> None:
    """Create corral's tables in a fresh database, or check an existing one (see
    :func:`~corral.checkpoint._tables.ensure_layout`)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        exists = conn.execute("SELECT to_regclass('corral_schema') IS NOT NULL").fetchone()
        older = (
            "an older layout this corral cannot read; finish its threads with the corral "
            "that wrote it, or use another database or schema"
        )
        new = not (exists and exists[0])
        ensure_layout(conn, where, postgres=True, new=new, reads=(SCHEMA_VERSION,), older=older)


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
