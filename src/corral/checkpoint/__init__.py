"""Checkpointers: the protocol and the built-in stores.

``PostgresSaver`` is imported on first use, so a program that keeps its threads in memory
or in a SQLite file never loads the Postgres driver's glue.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from corral._where import parse_db
from corral.checkpoint._thread_info import ThreadInfo
from corral.checkpoint.base import Checkpoint, Checkpointer
from corral.checkpoint.memory import MemorySaver
from corral.checkpoint.sqlite import SqliteSaver

if TYPE_CHECKING:
    from corral.checkpoint.postgres import PostgresSaver

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
        from corral.checkpoint.postgres import PostgresSaver

        return PostgresSaver(where.target, max_size=max_size)
    return SqliteSaver(where.target)


def __getattr__(name: str) -> object:
    """Import ``PostgresSaver`` the first time it is asked for."""
    if name != "PostgresSaver":
        msg = f"module 'corral.checkpoint' has no attribute {name!r}"
        raise AttributeError(msg)
    value = import_module("corral.checkpoint.postgres").PostgresSaver
    globals()[name] = value
    return value
