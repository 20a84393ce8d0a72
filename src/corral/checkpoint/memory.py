"""``MemorySaver``: the store of ``SqliteSaver`` in a SQLite database in this process's memory.

Every checkpoint goes through the same encoding, tables and statements as in a file
(:mod:`corral.checkpoint._store`), so a graph that runs with ``MemorySaver`` in tests
stores exactly what it would store in SQLite: a value JSON cannot hold fails here too, and
what comes back is a fresh copy, never the object that was put. The checkpoints live as
long as the saver (a process forked from this one starts with none).
"""

from __future__ import annotations

from corral.checkpoint.serde import Serializer
from corral.checkpoint.sqlite.saver import SqliteSaver

__all__ = ["MemorySaver"]


class MemorySaver(SqliteSaver):
    """A checkpointer that keeps every checkpoint in memory (for tests and notebooks).

    Args:
        serializer: teaches the encoding values JSON cannot hold (see
            :class:`~corral.checkpoint.serde.Serializer`).

    >>> from corral.checkpoint import Checkpoint
    >>> saver = MemorySaver()
    >>> saver.put(Checkpoint("t", "1", None, {"n": 1}))
    >>> saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))
    >>> [c.checkpoint_id for c in saver.chain("t")]
    ['1', '2']
    """

    def __init__(self, *, serializer: Serializer | None = None) -> None:
        super().__init__(":memory:", serializer=serializer, synchronous="NORMAL")

    def __repr__(self) -> str:
        return "MemorySaver()"

    def close(self) -> None:
        """Do nothing: closing would drop the checkpoints, which live as long as the saver."""
