"""``MemorySaver``: checkpoints kept in this process's memory."""

from __future__ import annotations

import copy

from corral.checkpoint.base import Checkpoint

__all__ = ["MemorySaver"]


class MemorySaver:
    """A checkpointer that keeps every checkpoint in memory (for tests and notebooks).

    >>> saver = MemorySaver()
    >>> saver.put(Checkpoint("t", "1", None, {"n": 1}))
    >>> [c.checkpoint_id for c in saver.chain("t")]
    ['1']
    """

    def __init__(self) -> None:
        self._threads: dict[str, list[Checkpoint]] = {}

    def put(self, checkpoint: Checkpoint) -> None:
        """Save a deep copy of ``checkpoint``, so later mutation cannot change history."""
        self._threads.setdefault(checkpoint.thread_id, []).append(copy.deepcopy(checkpoint))

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest first."""
        saved = self._threads.get(thread_id, [])
        if not saved:
            return []
        by_id = {c.checkpoint_id: c for c in saved}
        current = saved[-1] if checkpoint_id is None else by_id.get(checkpoint_id)
        out: list[Checkpoint] = []
        while current is not None:
            out.append(copy.deepcopy(current))
            if current.snapshot is not None or current.parent_id is None:
                break
            current = by_id.get(current.parent_id)
        out.reverse()
        return out

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        return [copy.deepcopy(c) for c in self._threads.get(thread_id, [])]
