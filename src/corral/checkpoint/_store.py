"""The store that ``SqliteSaver`` and ``PostgresSaver`` share: one row per checkpoint.

A checkpoint is one row of ``corral_checkpoints`` (:mod:`corral.checkpoint._tables`) with
three JSON texts: its snapshot (or NULL), its writes and its meta. Large values are stored
once, as rows of ``corral_items`` the texts refer to (:mod:`corral.checkpoint._rows`): a
write that appends a message stores it once, and the snapshots after it refer to it.

Snapshots are placed by the store (:meth:`Store.wants_snapshot`): once at least
:data:`SNAPSHOT_MIN` checkpoints since the last snapshot stored at least as many bytes as
it did (snapshots never outweigh the rest of the thread: storage stays linear), or once
they would reach :data:`REPLAY_BYTES` with the next one as large as the last (a read
replays a bounded number of bytes).

Compare-and-set: a put moves ``corral_threads.newest`` from the checkpoint it expected to
its own, and sets or clears the thread's holder (see "Holds" in
:mod:`corral.checkpoint.base`), in its transaction; when that changes no row, nothing is
written and the put is refused with the rule it broke. A read follows ``parent_id`` from
the wanted checkpoint to the nearest snapshot in one query; a loop of parents or a missing
parent (only damage makes them) is a ``CheckpointError`` naming the checkpoint, never a
hang.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, Final, NamedTuple, TypeVar

from corral.checkpoint import _tables as sql
from corral.checkpoint._rows import Known, Packer, Rows, digest
from corral.checkpoint._thread_info import ThreadInfoStore
from corral.checkpoint.base import (
    HOLD_S,
    Checkpoint,
    Damaged,
    check_thread_id,
    damaged,
    held,
    holder_id,
    lapsed,
    no_checkpoint,
    pass_fence,
    stale_parent,
    taken,
    unknown_parent,
)
from corral.checkpoint.serde import Serializer, decode, encode, encode_record
from corral.errors import CheckpointError

SNAPSHOT_MIN: Final = 20
"""Checkpoints between two snapshots placed for their stored bytes, at least."""
REPLAY_BYTES: Final = 1 << 20
"""Bytes the checkpoints since a snapshot may store before the next snapshot."""
_CACHED_ITEMS: Final = 200_000
"""Item hashes remembered before the memory of them is cleared."""
_THREADS: Final = 256
"""Threads whose tally (see :meth:`Store.wants_snapshot`) is remembered."""
_READS: Final = 16
"""Threads whose last read's items are remembered (their texts: a state's worth each)."""

_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
_DUMPS_ASCII = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
T = TypeVar("T")


class _Tally(NamedTuple):
    """What a thread stored up to ``checkpoint_id``: checkpoints and bytes since its last
    snapshot, the bytes of that snapshot, and of the last checkpoint."""

    checkpoint_id: str
    since: int
    stored_since: int
    snapshot_stored: int
    last_stored: int


class Store(ThreadInfoStore):
    """The checkpointer both database savers are; a subclass connects and names errors.

    A subclass sets ``where`` (a path, or a URL without its password), ``serializer`` and
    the class attributes below, and gives :meth:`_transaction`, yielding the connection in
    a write or read transaction and turning the driver's errors into ``CheckpointError``.
    """

    where: str
    serializer: Serializer | None
    items_query: str
    """How to fetch items by the JSON array of their ids: the one statement that differs
    between the databases."""
    sql: Callable[[str], str]
    """Turns a statement of :mod:`~corral.checkpoint._tables` into the driver's style."""
    transient: Callable[[Exception], bool]
    """Whether a driver's error says the database could not answer now (a lost connection,
    a disk that failed a read, an interrupted statement), not that its rows are damaged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Guards the memory below, shared by the threads that call the saver."""
        self._hashes: Known = {}
        self._tallies: dict[str, _Tally] = {}
        self._read_items: dict[int, dict[int, str]] = {}
        """Per thread row id, the items its last read fetched, hashed at its next snapshot:
        a process that resumes a thread does not store its items again, and a read that is
        not followed by a snapshot hashes nothing."""

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    def _writing(self, verb: str, work: Callable[[Any, Callable[[Any], str]], T]) -> T:
        """Return ``work(db, dumps)`` run in a write transaction, after the context's fence
        (see :func:`~corral.checkpoint.base.fenced`); run it again with every non-ASCII
        character escaped when a text holds a lone surrogate (not UTF-8)."""
        try:
            with self._transaction(verb, read=False) as db:
                pass_fence(db)
                return work(db, _DUMPS)
        except UnicodeEncodeError:
            with self._transaction(verb, read=False) as db:
                pass_fence(db)
                return work(db, _DUMPS_ASCII)

    def put(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` in one transaction if ``checkpoint.expected`` is the thread's
        newest checkpoint and no other live run holds the thread (else
        ``ConcurrentRunError``); ``SerializationError`` for a value JSON cannot hold,
        ``CheckpointError`` for a taken id, an unknown parent or a failing database."""
        check_thread_id(checkpoint.thread_id)
        meta = encode(checkpoint.meta, serializer=self.serializer, where="meta")
        packer, tally = self._writing(
            "write a checkpoint to", lambda db, dumps: self._put(db, checkpoint, meta, dumps)
        )
        with self._lock:
            if len(self._hashes) + len(packer.new) > _CACHED_ITEMS:
                self._hashes.clear()
            self._hashes.update(packer.new)
            _remember(self._tallies, checkpoint.thread_id, tally, _THREADS)

    def _put(self, db: Any, checkpoint: Checkpoint, meta: Any, dumps: Any) -> tuple[Packer, _Tally]:
        """Write the rows of one checkpoint inside the caller's transaction (its values
        encoded as they are packed: a value JSON cannot hold rolls it back)."""
        q, snapshot = self.sql, checkpoint.snapshot
        holds = checkpoint.holds
        params: dict[str, Any] = {
            "thread": checkpoint.thread_id,
            "id": checkpoint.checkpoint_id,
            "expected": checkpoint.expected,
            "parent": checkpoint.parent_id,
            "run": checkpoint.run,
            "lapsed": None,
            "holder": checkpoint.run if holds else None,
            "held_by": holder_id() if holds else None,
            "held_until": time.time() + HOLD_S if holds else None,
        }
        cas = q(sql.PUT_FIRST if checkpoint.expected is None else sql.PUT_NEXT)
        row = db.execute(cas, params).fetchone()
        if row is None:  # refused, unless only a holder no longer live stood in the way
            params["lapsed"] = self._refused(db, checkpoint, params)
            row = db.execute(cas, params).fetchone()
            if row is None:  # another run took the lapsed hold meanwhile
                self._refused(db, checkpoint, params)
                raise held(checkpoint.thread_id, None, self.where)
        thread = params["thread"] = int(row[0])
        packer = Packer(db, q(sql.PUT_ITEM), thread, self._hashes, dumps)
        params["snapshot"] = None
        if snapshot is not None:
            self._hash_read_items(thread)
            params["snapshot"] = dumps(packer.state(self._encode(snapshot, "state", "")))
        params["writes"] = dumps(
            [
                [node, packer.state(self._encode(update, "update", f"written by {node!r}"))]
                for node, update in checkpoint.writes
            ]
        )
        params["meta"] = dumps(meta)
        db.execute(q(sql.PUT_CHECKPOINT), params)
        if row[1]:
            db.execute(q(sql.DROP_PENDING), params)
        texts = [params["snapshot"] or "", params["writes"], params["meta"]]
        stored = packer.written + sum(map(len, texts))
        return packer, self._tally(checkpoint, stored)

    def _encode(self, values: Any, where: str, owner: str) -> Any:
        """Return the tree of a state or an update (``owner`` names its node in errors)."""
        return encode(values, serializer=self.serializer, where=where, owner=owner)

    def _tally(self, checkpoint: Checkpoint, stored: int) -> _Tally:
        """Return the thread's tally after ``checkpoint`` (see :meth:`wants_snapshot`)."""
        new = checkpoint.checkpoint_id
        if checkpoint.snapshot is not None:
            return _Tally(new, 0, 0, stored, 0)
        last = self._tallies.get(checkpoint.thread_id)
        if last is None or last.checkpoint_id != checkpoint.parent_id:
            return _Tally(new, 0, stored, 0, stored)  # unknown: the next one snapshots
        since, stored_since = last.since + 1, last.stored_since + stored
        return _Tally(new, since, stored_since, last.snapshot_stored, stored)

    def _refused(self, db: Any, checkpoint: Checkpoint, params: dict[str, Any]) -> str:
        """Raise the error for a put whose compare-and-set (with ``params``) changed nothing,
        or return the thread's holder when it alone stood in the way and is no longer live."""
        row = db.execute(self.sql(sql.REFUSED), params).fetchone()
        newest, holder, held_by, until, is_taken, parent_known = row or (None,) * 4 + (0, 0)
        if is_taken:
            raise taken(checkpoint, self.where)
        if checkpoint.parent_id is not None and not parent_known:
            raise unknown_parent(checkpoint, self.where)
        if newest != checkpoint.expected or holder is None:
            raise stale_parent(checkpoint, newest, self.where)
        if not lapsed(holder, held_by, until):
            raise held(checkpoint.thread_id, held_by, self.where)
        return str(holder)

    def check_free(self, thread_id: str, run: str) -> None:
        """Raise ``ConcurrentRunError`` when a live run other than ``run`` holds the thread
        (see ``Holds``)."""
        check_thread_id(thread_id)
        with self._transaction(f"read thread {thread_id!r} from", read=True) as db:
            row = db.execute(self.sql(sql.HOLDER), {"thread": thread_id}).fetchone()
        if row is not None and row[0] not in (None, run) and not lapsed(*row):
            raise held(thread_id, row[1], self.where)

    def release(self, thread_id: str, run: str) -> None:
        """Free the thread if ``run`` holds it (a run that ended without a last put)."""
        params = {"thread": thread_id, "run": run}
        self._writing("free a thread in", lambda db, _: db.execute(self.sql(sql.RELEASE), params))

    def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
        """Return whether the checkpoint put after ``checkpoint_id`` should carry a snapshot
        (see ``SnapshotAdvice``): also yes when this saver did not just write or read it."""
        with self._lock:
            t = self._tallies.get(thread_id)
        if t is None or t.checkpoint_id != checkpoint_id or t.snapshot_stored == 0:
            return True
        if t.since + 1 >= SNAPSHOT_MIN and t.stored_since >= t.snapshot_stored:
            return True
        return t.stored_since + t.last_stored >= REPLAY_BYTES  # the next one as large

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        """Save a finished task's ``record`` in one transaction (see ``TaskWrites``)."""
        check_thread_id(thread_id)
        tree = encode_record(record, self.serializer)

        def work(db: Any, dumps: Callable[[Any], str]) -> None:
            params = {"thread": thread_id, "id": checkpoint_id, "task": task, "record": dumps(tree)}
            if db.execute(self.sql(sql.PUT_PENDING), params).fetchone() is None:
                raise no_checkpoint(thread_id, checkpoint_id, self.where)

        self._writing("record a finished task in", work)

    def pending_writes(self, thread_id: str, checkpoint_id: str) -> dict[int, dict[str, Any]]:
        """Return the records of the finished tasks after ``checkpoint_id``, by task."""
        check_thread_id(thread_id)
        out: dict[int, dict[str, Any]] = {}
        with self._transaction("read checkpoints from", read=True) as db:
            rows = self._fetch(db, sql.PENDING, thread_id, thread_id, checkpoint_id)
        for task, text in rows:
            where = f"task {task} after checkpoint {checkpoint_id!r}"
            try:
                out[int(task)] = decode(json.loads(text), serializer=self.serializer, where=where)
            except CheckpointError as exc:
                if exc.path is not None:
                    raise
                raise CheckpointError(f"{exc} (in {self.where!r})", path=self.where) from exc
            except Exception as exc:
                damaged(self.where, thread_id, checkpoint_id, Damaged(f"{where}: {exc!r}"))
        return out

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest
        first; ``CheckpointError`` naming the checkpoint for damaged rows (a loop of
        parents, a missing parent, a row or item that cannot be read)."""
        found = self._read(thread_id, checkpoint_id, chain=True)
        if found is None:
            return []
        thread, read = found
        chain = read.checkpoints()
        with self._lock:
            _remember(self._read_items, thread, read.items, _READS)
            _remember(self._tallies, thread_id, _read_tally(read), _THREADS)
        return chain

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        found = self._read(thread_id, None, chain=False)
        return [] if found is None else found[1].checkpoints()

    def newest_id(self, thread_id: str) -> str | None:
        """Return the id of the thread's newest checkpoint (``None``: it has none), unread."""
        check_thread_id(thread_id)
        with self._transaction(f"read thread {thread_id!r} from", read=True) as db:
            found = db.execute(self.sql(sql.THREAD), {"thread": thread_id}).fetchone()
        return None if found is None else str(found[1])

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        with self._transaction("read threads from", read=True) as db:
            return [str(name) for (name,) in db.execute(self.sql(sql.THREADS)).fetchall()]

    def _fetch(self, db: Any, query: str, thread: int | str, thread_id: str, wanted: str) -> Any:
        """Return the rows of ``query`` (``thread``: the thread's row id or name); when they
        cannot be fetched (a text that is not UTF-8, a damaged page), name ``wanted``; the
        database's own failure (:attr:`transient`) is the driver's error to name."""
        try:
            return db.execute(self.sql(query), {"thread": thread, "id": wanted}).fetchall()
        except Exception as exc:
            if self.transient(exc):
                raise
            damaged(self.where, thread_id, wanted, exc)

    def _read(
        self, thread_id: str, checkpoint_id: str | None, *, chain: bool
    ) -> tuple[int, Rows] | None:
        """Return the thread's row id and its rows (``chain``: from ``checkpoint_id``, the
        newest when ``None``, up its parents to a snapshot; else all), their items fetched;
        ``None`` when the thread or ``checkpoint_id`` is unknown."""
        check_thread_id(thread_id)
        with self._transaction(f"read thread {thread_id!r} from", read=True) as db:
            found = db.execute(self.sql(sql.THREAD), {"thread": thread_id}).fetchone()
            if found is None:
                return None
            thread, wanted = int(found[0]), found[1] if checkpoint_id is None else checkpoint_id
            query = sql.CHAIN if chain else sql.THREAD_ROWS
            rows = self._fetch(db, query, thread, thread_id, wanted)
            if not rows and checkpoint_id is not None:
                return None
            self._check_parents(thread_id, rows, wanted, chain=chain)
            read = Rows(self.where, self.serializer, thread_id, rows)
            read.fetch(db, self.items_query)
        return thread, read

    def _check_parents(self, thread_id: str, rows: list[Any], wanted: str, *, chain: bool) -> None:
        """Name the first of ``rows`` (in the order they were put) whose parent is not before
        it, but a chain's first row, which may be a snapshot, and ``wanted`` when it is not
        there: a parent is always put first, so only damage (a loop of parents, a missing
        row) does that."""
        seen: set[str | None] = {None}
        for n, (checkpoint_id, parent_id, snapshot, *_) in enumerate(rows):
            if parent_id not in seen and not (chain and n == 0 and snapshot is not None):
                problem = f"its parent {parent_id!r} is missing or was put after it"
                damaged(self.where, thread_id, checkpoint_id, Damaged(problem))
            seen.add(checkpoint_id)
        if wanted not in seen:
            damaged(self.where, thread_id, wanted, Damaged("its row is missing"))

    def _hash_read_items(self, thread: int) -> None:
        """Remember the hashes of the items the thread's last read fetched, so the snapshot
        about to be written refers to them instead of storing them again."""
        with self._lock:
            items = self._read_items.pop(thread, None)
            for n, text in (items or {}).items():
                self._hashes[thread, digest(text)] = (n, len(text))


def _remember(memory: dict[Any, T], key: Any, value: T, limit: int) -> None:
    """Set ``memory[key]`` as its newest entry, forgetting the oldest beyond ``limit``."""
    memory.pop(key, None)
    memory[key] = value
    while len(memory) > limit:
        del memory[next(iter(memory))]


def _read_tally(read: Rows) -> _Tally:
    """Return the thread's tally at the last of ``read``'s rows (a chain: from a snapshot)."""
    after = [size + read.item_bytes(n) for n, size in enumerate(read.sizes[1:], 1)]
    return _Tally(read.rows[-1][0], len(after), sum(after), read.sizes[0], (after or [0])[-1])
