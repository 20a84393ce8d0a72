"""``MemorySaver``: checkpoints kept in this process's memory.

Every checkpoint goes through the same JSON encoding as :class:`~corral.checkpoint.SqliteSaver`
(:mod:`corral.checkpoint.serde`) and is kept in its encoded form, so a graph that runs with
``MemorySaver`` in tests stores exactly what it would store in SQLite: a value JSON cannot
hold fails here too, and what comes back is a fresh copy, never the object that was put.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from corral.checkpoint.base import (
    Checkpoint,
    broken_chain,
    check_thread_id,
    no_checkpoint,
    stale_parent,
    taken,
    unknown_parent,
)
from corral.checkpoint.serde import (
    Serializer,
    decode,
    decode_checkpoint,
    encode_checkpoint,
    encode_record,
)

__all__ = ["MemorySaver"]


class MemorySaver:
    """A checkpointer that keeps every checkpoint in memory (for tests and notebooks).

    Args:
        serializer: teaches the encoding values JSON cannot hold (see
            :class:`~corral.checkpoint.serde.Serializer`).

    >>> saver = MemorySaver()
    >>> saver.put(Checkpoint("t", "1", None, {"n": 1}))
    >>> saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))
    >>> [c.checkpoint_id for c in saver.chain("t")]
    ['1', '2']
    """

    fresh_reads: ClassVar[bool] = True
    """Every read decodes afresh: what it returns is the caller's (see ``reads_fresh``)."""

    def __init__(self, *, serializer: Serializer | None = None) -> None:
        self.serializer = serializer
        self._threads: dict[str, dict[str, Checkpoint]] = {}
        """Per thread, the checkpoints by id in the order they were put, their snapshot,
        writes and meta the encoded trees."""
        self._pending: dict[tuple[str, str], dict[int, Any]] = {}
        """Per (thread, checkpoint), the encoded records of its superstep's finished tasks."""
        self._lock = threading.Lock()
        """Held while a put checks the thread's newest checkpoint and adds its own."""

    def put(self, checkpoint: Checkpoint) -> None:
        """Save an encoded copy of ``checkpoint``, so later mutation cannot change history.

        Raises:
            SerializationError: a value JSON cannot hold (the message names where it sits).
            CheckpointError: the id is already taken in the thread, or the parent is unknown.
            ConcurrentRunError: the thread's newest checkpoint is not ``checkpoint.expected``.
        """
        check_thread_id(checkpoint.thread_id)
        trees = encode_checkpoint(checkpoint, self.serializer)
        thread, new, parent = checkpoint.thread_id, checkpoint.checkpoint_id, checkpoint.parent_id
        with self._lock:
            saved = self._threads.get(thread, {})
            if new in saved:
                raise taken(checkpoint, None)
            if parent is not None and parent not in saved:
                raise unknown_parent(checkpoint, None)
            newest = next(reversed(saved)) if saved else None
            if newest != checkpoint.expected:
                raise stale_parent(checkpoint, newest, None)
            self._threads.setdefault(thread, saved)[new] = Checkpoint(thread, new, parent, *trees)
            if parent is not None:  # its superstep is now in the checkpoint
                self._pending.pop((thread, parent), None)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        """Save an encoded copy of a finished task's ``record`` (see ``TaskWrites``).

        Raises:
            SerializationError: a value JSON cannot hold (the message names where it sits).
            CheckpointError: the thread has no checkpoint ``checkpoint_id``.
        """
        check_thread_id(thread_id)
        if checkpoint_id not in self._threads.get(thread_id, {}):
            raise no_checkpoint(thread_id, checkpoint_id, None)
        tree = encode_record(record, self.serializer)
        self._pending.setdefault((thread_id, checkpoint_id), {})[task] = tree

    def pending_writes(self, thread_id: str, checkpoint_id: str) -> dict[int, dict[str, Any]]:
        """Return the records of the finished tasks after ``checkpoint_id``, by task."""
        trees = self._pending.get((thread_id, checkpoint_id), {})
        return {
            task: decode(tree, serializer=self.serializer, where=f"task {task}")
            for task, tree in sorted(trees.items())
        }

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest first.

        Raises:
            CheckpointError: the parents loop or one is missing (damage).
        """
        check_thread_id(thread_id)
        saved = self._threads.get(thread_id, {})
        current = saved.get(next(reversed(saved), "") if checkpoint_id is None else checkpoint_id)
        out: list[Checkpoint] = []
        while current is not None:
            out.append(current)
            parent = current.parent_id
            if current.snapshot is not None or parent is None:
                break
            if any(c.checkpoint_id == parent for c in out):
                problem = f"its parents loop back to {parent!r}"
                raise broken_chain(thread_id, current.checkpoint_id, problem, None)
            current = saved.get(parent)
            if current is None:
                problem = f"its parent {parent!r} is missing"
                raise broken_chain(thread_id, out[-1].checkpoint_id, problem, None)
        return [self._decode(c) for c in reversed(out)]

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        check_thread_id(thread_id)
        return [self._decode(c) for c in self._threads.get(thread_id, {}).values()]

    def newest_id(self, thread_id: str) -> str | None:
        """Return the id of the thread's newest checkpoint (``None``: it has none), unread."""
        check_thread_id(thread_id)
        with self._lock:
            return next(reversed(self._threads.get(thread_id, {})), None)

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        return list(self._threads)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints (a thread it does not hold is no error)."""
        with self._lock:
            self._threads.pop(thread_id, None)
            for key in [key for key in self._pending if key[0] == thread_id]:
                del self._pending[key]

    def close(self) -> None:
        """Do nothing: memory needs no closing (here so both savers can be closed alike)."""

    def _decode(self, stored: Checkpoint) -> Checkpoint:
        head = (stored.thread_id, stored.checkpoint_id, stored.parent_id)
        parts = (stored.snapshot, stored.writes, stored.meta)
        return decode_checkpoint(head, *parts, serializer=self.serializer)
