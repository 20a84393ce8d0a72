"""Open the checkpointer a ``--db`` option names: a PostgreSQL URL or a SQLite file path."""

from __future__ import annotations

import os

from corral._where import parse_db
from corral.checkpoint.postgres import PostgresSaver
from corral.checkpoint.sqlite import SqliteSaver

__all__ = ["is_postgres_url", "open_saver", "shown_db"]

_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(db: str) -> bool:
    """Return whether ``db`` names a PostgreSQL database rather than a SQLite file.

    >>> is_postgres_url("PostgreSQL://db.example/agents"), is_postgres_url("runs/c.sqlite")
    (True, False)
    """
    return db.lower().startswith(_SCHEMES)


def open_saver(db: str, *, max_size: int = 8) -> PostgresSaver | SqliteSaver:
    """Return a ``PostgresSaver`` for a ``postgresql://`` URL, else a ``SqliteSaver`` for the
    file ``db`` names (``FILE`` or ``sqlite:FILE``; its folder is created).

    Args:
        max_size: the most connections a ``PostgresSaver`` opens at once.

    Raises:
        CheckpointError: a ``--db`` form corral does not take (see
            :func:`~corral._where.parse_db`), or the database cannot be opened
            (the message says why).
    """
    where = parse_db(db)
    if where.kind == "postgres":
        return PostgresSaver(where.target, max_size=max_size)
    folder = os.path.dirname(where.target)
    if folder:
        os.makedirs(folder, exist_ok=True)
    return SqliteSaver(where.target)


def shown_db(db: str) -> str:
    """Return ``db`` as messages show it: a PostgreSQL URL that holds a password without it
    (see :func:`~corral.checkpoint._pg_schema.redact`), anything else as given.

    >>> shown_db("runs/c.sqlite"), shown_db("postgresql://db.example/agents")
    ('runs/c.sqlite', 'postgresql://db.example/agents')
    """
    if not is_postgres_url(db):
        return db
    from psycopg.conninfo import conninfo_to_dict

    from corral.checkpoint._pg_schema import redact

    try:
        secret = conninfo_to_dict(db).get("password")
    except Exception:
        return redact(db)
    return redact(db) if secret else db
