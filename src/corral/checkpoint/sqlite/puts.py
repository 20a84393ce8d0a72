"""Packing one checkpoint against what this process put (or read) last in its thread.

Shared by :class:`~corral.checkpoint.SqliteSaver` and :class:`~corral.checkpoint.
PostgresSaver`. :func:`pack` turns a checkpoint into its texts through a
:class:`~corral.checkpoint.sqlite.packing.Packer`: the snapshot re-uses the previous
snapshot's packing of unchanged list items, the meta is stored as its changes since the
parent (:func:`meta_text`), and :class:`LastPuts` remembers, per thread, what the next put
needs of this one.

Placing snapshots by bytes. The runtime places a snapshot every ``SNAPSHOT_EVERY``
checkpoints; that bounds the count of writes a read replays, not their bytes (a 50 MB
string changed every step would be parsed up to 19 times). So the savers also advise it
(:class:`~corral.checkpoint.base.SnapshotAdvice`, :meth:`LastPuts.wants_snapshot`): the
next checkpoint carries a snapshot once the writes since the last snapshot, with the next
write guessed as large as the last, refer to at least as many bytes as that snapshot
stored, and to at least :data:`REPLAY_BYTES`. So a read parses its snapshot and at most
``max(REPLAY_BYTES, the snapshot's bytes)`` of writes, plus what one write exceeded the
guess by; a 50 MB string replaced every step gets a snapshot at every checkpoint, which
costs no storage, as the snapshot refers to the value its write stored. Storage stays
linear: a snapshot follows at least as many bytes of writes as the previous one stored.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _encode_str
from typing import Any, Final, NamedTuple

from corral.checkpoint.base import Checkpoint
from corral.checkpoint.serde import TAG, Serializer, encode
from corral.checkpoint.sqlite.packing import (
    SEEN_LIMIT,
    ListPacking,
    Packer,
    ReadList,
    Stored,
    plain,
)

__all__ = ["REPLAY_BYTES", "Last", "LastPuts", "Packed", "encode_writes", "meta_text", "pack"]

REPLAY_BYTES: Final = 1 << 20
"""Writes referring to fewer bytes than this since the last snapshot never ask for another."""


class Last(NamedTuple):
    """What this process last put (or read) in a thread, to pack the next checkpoint."""

    checkpoint_id: str
    meta: dict[str, str] | str
    """The JSON of each meta value (or of the whole meta when it is not a plain dict; ``""``
    after a read: the next meta is stored whole)."""
    lists: Mapping[str, ListPacking | ReadList]
    """The lists of the thread's last snapshot, for :meth:`Packer.snapshot` (after a read:
    the lists of the chain's snapshot read as runs of stored values)."""
    snapshot_bytes: int = 0
    """Bytes the thread's last snapshot stored (after a read: took to read)."""
    since_bytes: int = 0
    """Bytes the writes after that snapshot refer to, up to ``checkpoint_id``."""
    write_bytes: int = 0
    """Bytes the writes of ``checkpoint_id`` itself refer to (the guess for the next)."""
    written: dict[int, Stored] | None = None
    """The flat dicts the writes since the last snapshot stored (see :data:`Stored`)."""


class LastPuts:
    """Per thread, the :class:`Last` of this process (bounded, safe across threads), and the
    advice on placing snapshots by bytes (:meth:`wants_snapshot`)."""

    def __init__(self, threads: int) -> None:
        self._threads: dict[str, Last] = {}
        self._limit = threads
        self._lock = threading.Lock()

    def get(self, thread_id: str) -> Last | None:
        return self._threads.get(thread_id)

    def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
        """Return whether the checkpoint after ``checkpoint_id`` should carry a snapshot: the
        writes since the thread's last snapshot, and the next one if it is as large as the
        last, refer to at least as many bytes as that snapshot stored, and to at least
        :data:`REPLAY_BYTES`."""
        last = self._threads.get(thread_id)
        return (
            last is not None
            and last.checkpoint_id == checkpoint_id
            and last.since_bytes >= 0
            and last.since_bytes + last.write_bytes >= max(REPLAY_BYTES, last.snapshot_bytes)
        )

    def put(self, thread_id: str, last: Last) -> None:
        """Remember what a committed put of the thread packed."""
        with self._lock:
            self._threads.pop(thread_id, None)
            if len(self._threads) >= self._limit:
                del self._threads[next(iter(self._threads))]
            self._threads[thread_id] = last

    def read(
        self,
        thread_id: str,
        checkpoint_id: str,
        snapshot_bytes: int,
        since: int,
        lists: dict[str, ReadList] | None = None,
        newest: bool = True,
    ) -> None:
        """Note a read of the thread's newest chain (unless this process put its end), and
        the lists of its snapshot (``lists``) that the next snapshot may re-use.

        A read of an older chain (``newest`` false: a fork is about to start from it) is
        noted only when nothing is known of the thread: the fork's first checkpoint, a
        snapshot, then re-uses the stored items of the lists it read instead of storing them
        again, and what this process knows of the newest it put is never replaced by it."""
        if self.keeps(thread_id, checkpoint_id, newest):
            read = dict(lists) if lists else {}
            self.put(thread_id, Last(checkpoint_id, "", read, snapshot_bytes, since, 0))

    def keeps(self, thread_id: str, checkpoint_id: str, newest: bool = True) -> bool:
        """Return whether :meth:`read` of the chain ending at ``checkpoint_id`` notes it (and
        keeps its lists): when nothing is known of the thread, or a newest chain this process
        did not put last. A reader asks first, so a read no one keeps takes no copies."""
        known = self._threads.get(thread_id)
        return known is None or (newest and known.checkpoint_id != checkpoint_id)

    def read_texts(self, thread_id: str) -> list[Sequence[str]]:
        """Return the stored texts of the read lists the thread's next snapshot re-uses (see
        ``StoredValues.hash_reads``)."""
        last = self._threads.get(thread_id)
        if last is None:
            return []
        return [packing.texts for packing in last.lists.values() if type(packing) is ReadList]

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)


class Packed(NamedTuple):
    """The texts of one checkpoint, and what to remember of it once committed."""

    snapshot: str | None
    writes: str
    meta: str
    meta_is_delta: bool
    last: Last


def encode_writes(checkpoint: Checkpoint, serializer: Serializer | None) -> list[Any]:
    """Return a checkpoint's writes encoded (updates of JSON values only are kept as they
    are: the encoder would return an equal copy, and packing only reads them)."""
    return [
        [
            node,
            update
            if plain(update)
            else encode(
                update, serializer=serializer, where="update", owner=f"written by {node!r}"
            ),
        ]
        for node, update in checkpoint.writes
    ]


def pack(packer: Packer, checkpoint: Checkpoint, writes: list[Any], last: Last | None) -> Packed:
    """Return the texts of ``checkpoint`` (``writes`` from :func:`encode_writes`), packed
    against what this process put last in the thread."""
    # The writes first: the flat dicts they store are noted (packer.fresh), and a snapshot
    # holding the same objects re-uses them (packer.seen) instead of encoding them again.
    earlier_written = last.written if last is not None and last.written is not None else {}
    fresh: dict[int, Stored] = {}
    packer.fresh = fresh
    dumps, fields = packer.dumps, packer.fields
    if len(writes) == 1:  # a superstep of one task: its node's update
        node, update = writes[0]
        name = _encode_str(node) if type(node) is str else dumps(node)
        writes_text = f"[[{name},{fields(update)}]]"
    else:
        writes_text = "[" + ",".join([f"[{dumps(n)},{fields(u)}]" for n, u in writes]) + "]"
    packer.fresh = None
    replay = packer.referred + len(writes_text)
    if fresh and len(earlier_written) < SEEN_LIMIT:
        written = {**earlier_written, **fresh}
    else:
        written = earlier_written
    snapshot_text, lists, stored = None, None, 0
    if checkpoint.snapshot is not None:
        earlier = last.lists if last is not None else {}
        packer.seen = written
        snapshot_text, lists = packer.snapshot(checkpoint.snapshot, earlier)
        stored = packer.written + len(snapshot_text)
    # The meta is stored as its changes since the parent when this process wrote the
    # parent (whole on a snapshot, so every chain starts from a whole meta).
    before = (
        last.meta
        if last is not None
        and checkpoint.snapshot is None
        and checkpoint.parent_id == last.checkpoint_id
        and type(last.meta) is dict
        else None
    )
    meta_texts, items = packer.meta_texts(checkpoint.meta, before)
    meta, delta = meta_text(meta_texts, items, before)
    new_id = checkpoint.checkpoint_id
    if lists is not None:
        kept = Last(new_id, meta_texts, lists, stored, 0, replay)
    elif last is not None and last.checkpoint_id == checkpoint.parent_id and last.since_bytes >= 0:
        since = last.since_bytes + replay
        kept = Last(new_id, meta_texts, last.lists, last.snapshot_bytes, since, replay, written)
    else:  # no snapshot, and the parent is not ours: no advice on the next snapshot
        kept = Last(new_id, meta_texts, last.lists if last else {}, 0, -1, replay, written)
    return Packed(snapshot_text, writes_text, meta, delta, kept)


def meta_text(
    texts: dict[str, str] | str, items: list[str], before: dict[str, str] | None
) -> tuple[str, bool]:
    """Return the meta's JSON and whether it is a delta, from what :meth:`Packer.meta_texts`
    returned (``items``: of the keys whose JSON changed since ``before``, the parent's, or
    of every key when there is no parent to store a delta against). Removed keys make it
    ``{"$corral": "delta", "v": ..., "del": [...]}``."""
    if isinstance(texts, str):
        return texts, False
    changed = ",".join(items)
    if before is None:
        return "{" + changed + "}", False
    if not before.keys() <= texts.keys():
        gone = [k for k in before if k not in texts]
        return f'{{"{TAG}":"delta","v":{{{changed}}},"del":{json.dumps(gone)}}}', True
    return "{" + changed + "}", True
