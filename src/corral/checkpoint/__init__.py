"""Checkpointers: the protocol and the built-in stores (``PostgresSaver`` imports the
PostgreSQL driver when one is made, so that a program that keeps its threads in memory or in
a SQLite file never loads it)."""

from __future__ import annotations

from corral._where import parse_db
from corral.checkpoint._thread_info import ThreadInfo
from corral.checkpoint.base import Checkpoint, Checkpointer
from corral.checkpoint.memory import MemorySaver
from corral.checkpoint.postgres import PostgresSaver
from corral.checkpoint.sqlite import SqliteSaver

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "MemorySaver",
    "PostgresSaver",
    "SqliteSaver",
    "ThreadInfo",
    "open_saver",
]


def open_saver(db: str, *, max_size: int = 8) -> PostgresSaver | SqliteSaver:
    """Return the checkpointer a ``--db`` option names: a ``PostgresSaver`` for a
    ``postgresql://`` URL, else a ``SqliteSaver`` for the file ``db`` names (``FILE`` or
    ``sqlite:FILE``; its folder is created).

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
    return SqliteSaver(where.target)
