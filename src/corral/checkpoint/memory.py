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
from corral.errors import CheckpointError

__all__ = ["MemorySaver"]


class _Stored:
    """One checkpoint in its encoded form (plain JSON trees, built fresh by the encoder).

    Never changed once made (a plain class: a frozen dataclass costs ~1 us a put to build).
    """

    __slots__ = ("head", "meta", "snapshot", "writes")

    def __init__(
        self, head: tuple[str, str, str | None], snapshot: Any, writes: list[Any], meta: Any
    ) -> None:
        self.head = head
        self.snapshot = snapshot
        self.writes = writes
        self.meta = meta


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
        self._threads: dict[str, dict[str, _Stored]] = {}
        """Per thread, the checkpoints by id, in the order they were put (dicts keep it)."""
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
        snapshot, writes, meta = encode_checkpoint(checkpoint, self.serializer)
        head = (checkpoint.thread_id, checkpoint.checkpoint_id, checkpoint.parent_id)
        stored = _Stored(head, snapshot, writes, meta)
        with self._lock:
            saved = self._threads.get(checkpoint.thread_id, {})
            is_taken = checkpoint.checkpoint_id in saved
            _check_put(checkpoint, is_taken, _parent_known(checkpoint, saved))
            newest = next(reversed(saved)) if saved else None
            if newest != checkpoint.expected:
                raise stale_parent(checkpoint, newest, None)
            self._threads.setdefault(checkpoint.thread_id, saved)[checkpoint.checkpoint_id] = stored
            if checkpoint.parent_id is not None:  # its superstep is now in the checkpoint
                self._pending.pop((checkpoint.thread_id, checkpoint.parent_id), None)

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
            raise _unknown_parent(thread_id, checkpoint_id)
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
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest first."""
        check_thread_id(thread_id)
        saved = self._threads.get(thread_id)
        if not saved:
            return []
        if checkpoint_id is None:
            checkpoint_id = next(reversed(saved))
        current = saved.get(checkpoint_id)
        out: list[Checkpoint] = []
        while current is not None:
            out.append(self._decode(current))
            parent_id = current.head[2]
            if current.snapshot is not None or parent_id is None:
                break
            if any(c.checkpoint_id == parent_id for c in out):
                problem = f"its parents loop back to {parent_id!r}"
                raise broken_chain(thread_id, current.head[1], problem, None)
            current = saved.get(parent_id)
            if current is None:
                problem = f"its parent {parent_id!r} is missing"
                raise broken_chain(thread_id, out[-1].checkpoint_id, problem, None)
        out.reverse()
        return out

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        check_thread_id(thread_id)
        return [self._decode(stored) for stored in self._threads.get(thread_id, {}).values()]

    def newest_id(self, thread_id: str) -> str | None:
        """Return the id of the thread's newest checkpoint (``None``: it has none), unread."""
        check_thread_id(thread_id)
        with self._lock:
            return next(reversed(self._threads.get(thread_id, {})), None)

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        return list(self._threads)

    def close(self) -> None:
        """Do nothing: memory needs no closing (here so both savers can be closed alike)."""

    def _decode(self, stored: _Stored) -> Checkpoint:
        return decode_checkpoint(
            stored.head, stored.snapshot, stored.writes, stored.meta, serializer=self.serializer
        )


def _parent_known(checkpoint: Checkpoint, saved: dict[str, _Stored]) -> bool:
    return checkpoint.parent_id is None or checkpoint.parent_id in saved


def _unknown_parent(thread_id: str, checkpoint_id: str) -> CheckpointError:
    msg = (
        f"cannot record a finished task after checkpoint {checkpoint_id!r}: thread "
        f"{thread_id!r} has no such checkpoint; put the checkpoint first"
    )
    return CheckpointError(msg)


def _check_put(checkpoint: Checkpoint, is_taken: bool, parent_known: bool) -> None:
    """Raise ``CheckpointError`` for a checkpoint that would break its thread's history."""
    if is_taken:
        raise taken(checkpoint, None)
    if not parent_known:
        raise unknown_parent(checkpoint, None)
