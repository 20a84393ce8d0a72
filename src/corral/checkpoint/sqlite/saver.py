"""``SqliteSaver``: the checkpointer over one SQLite file.

The layout and its invariants are described in :mod:`corral.checkpoint.sqlite`.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar, Final, Literal

from corral._where import check_sqlite_path
from corral.checkpoint._stored import Damaged, StoredValues
from corral.checkpoint.base import (
    Checkpoint,
    check_thread_id,
    current_fence,
    stale_parent,
    taken,
    unknown_parent,
)
from corral.checkpoint.serde import (
    Serializer,
    decode,
    encode_checkpoint,
    encode_record,
)
from corral.checkpoint.sqlite._ids import CURRENT, Lookups, lookups, newest_id, seq_of
from corral.checkpoint.sqlite._layout import (
    CHAIN,
    NEWEST,
    STALE,
    first_range,
    newest_params,
    range_start,
)
from corral.checkpoint.sqlite._reading import (
    check_chain,
    damaged,
    never_kept,
    read_rows,
    texts_of,
    thread_of,
)
from corral.checkpoint.sqlite._schema import (
    open_file,
    sqlite_error,
    sqlite_errors,
    transaction,
)
from corral.checkpoint.sqlite._writing import (
    RowsAhead,
    check_room,
    insert_record,
    insert_rows,
    next_seq,
    numbered_insert,
    taken_seq,
)
from corral.checkpoint.sqlite.packing import Packer
from corral.checkpoint.sqlite.puts import Last, LastPuts, encode_writes, pack
from corral.errors import CheckpointError

__all__ = ["SqliteSaver"]

_KNOWN_CACHE: Final = 200_000
"""Hashes of committed blobs (and checkpoint ids) remembered before the caches are cleared."""
_LAST_THREADS: Final = 64
"""Threads whose last checkpoint this process remembers, to write the next one as a delta."""


class SqliteSaver:
    """A checkpointer backed by one SQLite file, safe for several processes at once.

    Args:
        path: the database file; its folder is created. ``":memory:"`` keeps it in memory.
        serializer: teaches the encoding values JSON cannot hold (see
            :class:`~corral.checkpoint.serde.Serializer`); pass the same one to read them.
        synchronous: ``"FULL"`` (default) syncs every checkpoint to disk, so a committed
            checkpoint survives a power cut; ``"NORMAL"`` syncs less often (in WAL mode a
            process crash still loses nothing, a power cut may lose the newest checkpoints).
        timeout_s: how long a call waits for another process's transaction to finish
            (in slices, so that a Ctrl-C gets through at once).

    >>> with SqliteSaver(":memory:") as saver:
    ...     saver.put(Checkpoint("t", "1", None, {"n": 1}))
    ...     saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))
    ...     [(c.checkpoint_id, c.writes) for c in saver.chain("t")]
    [('1', []), ('2', [('inc', {'n': 2})])]
    """

    fresh_reads: ClassVar[bool] = True
    """Every read decodes afresh: what it returns is the caller's (see ``reads_fresh``)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        serializer: Serializer | None = None,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        timeout_s: float = 30.0,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            msg = f"synchronous={synchronous!r} is not a SQLite sync level; use 'FULL' or 'NORMAL'"
            raise ValueError(msg)
        self.path = os.fspath(path)
        check_sqlite_path(self.path)  # a FIFO or /dev/null is not "a disk full or failing"
        self.serializer = serializer
        self.synchronous = synchronous
        self.timeout_s = timeout_s
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._first = 0
        """The range of the file's first thread (see :mod:`~corral.checkpoint.sqlite._layout`)."""
        self._lookups: Lookups = CURRENT
        self._closed = False
        self._threads: dict[str, int] = {}
        """Thread name -> row id, for threads known to be committed."""
        self._seqs: dict[tuple[int, str], int] = {}
        """(thread, checkpoint id) -> seq, for checkpoints known to be committed."""
        self._blob_ids: dict[bytes, int] = {}
        """Content hash -> blob id, for blobs known to be committed."""
        self._last = LastPuts(_LAST_THREADS)
        """Per thread, what this process put last (for meta deltas, snapshot reuse and
        placing snapshots by bytes)."""
        self._values = StoredValues(self._blob_ids)
        self._next_seq: dict[int, int] = {}
        """Per thread, the seq after the last row this process put (or read) in it: the next
        row's, unless another process wrote to the thread since (then a numbered put fails
        whole and goes the long way)."""
        with self._lock:
            self._connection()

    # -- the protocol ------------------------------------------------------------------

    def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
        """Return whether the next checkpoint should carry a snapshot (see ``SnapshotAdvice``)."""
        return self._last.wants_snapshot(thread_id, checkpoint_id)

    def put(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` in one transaction if ``checkpoint.expected`` is the thread's
        newest checkpoint.

        Raises:
            SerializationError: a value JSON cannot hold (the message names where it sits).
            ConcurrentRunError: another run of the thread committed first.
            CheckpointError: the id is already taken in the thread, the parent is unknown,
                or the file cannot be written (the message says why: a full disk, a
                read-only file, another process holding it).
        """
        check_thread_id(checkpoint.thread_id)
        serializer = self.serializer
        writes = encode_writes(checkpoint, serializer)
        with self._lock:
            try:  # SQLite's errors are turned here: a context manager costs ~2 µs a put
                conn = self._connection()
                try:
                    self._put(conn, checkpoint, writes, ensure_ascii=False)
                except UnicodeEncodeError:
                    # A lone surrogate cannot be stored as UTF-8 text; escape every non-ASCII.
                    self._put(conn, checkpoint, writes, ensure_ascii=True)
                except (ValueError, RecursionError):
                    # Packing met what the shortcuts let through (an int too long for JSON):
                    # the encoder names where it sits.
                    encode_checkpoint(checkpoint, serializer)
                    raise
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                verb = "write a checkpoint to"
                raise sqlite_error(self.path, self.timeout_s, verb, exc) from exc

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        """Save a finished task's ``record`` in one transaction (see ``TaskWrites``).

        Raises:
            SerializationError: a value JSON cannot hold (the message names where it sits).
            CheckpointError: the thread has no checkpoint ``checkpoint_id``, or the file
                cannot be written.
        """
        check_thread_id(thread_id)
        tree = encode_record(record, self.serializer)
        with self._lock, self._errors("record a finished task in"):
            conn = self._connection()
            try:
                self._put_writes(conn, thread_id, checkpoint_id, task, tree, ensure_ascii=False)
            except UnicodeEncodeError:
                self._put_writes(conn, thread_id, checkpoint_id, task, tree, ensure_ascii=True)

    def pending_writes(self, thread_id: str, checkpoint_id: str) -> dict[int, dict[str, Any]]:
        """Return the records of the finished tasks after ``checkpoint_id``, by task."""
        check_thread_id(thread_id)
        with self._lock, self._errors("read checkpoints from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            seq = None if thread is None else self._seq(conn, thread, checkpoint_id)
            if thread is None or seq is None:
                return {}
            fetch = self._values.fetcher(texts_of(conn, self._lookups.folded))
            out: dict[int, dict[str, Any]] = {}
            for task, text in conn.execute(
                "SELECT task, record FROM pending_writes WHERE thread = ? AND seq = ? "
                "ORDER BY task",
                (thread, seq),
            ).fetchall():
                where = f"task {task} after checkpoint {checkpoint_id!r}"
                try:
                    out[int(task)] = decode(
                        json.loads(text), serializer=self.serializer, fetch=fetch, where=where
                    )
                except CheckpointError:
                    raise
                except Exception as exc:
                    damaged(self.path, thread_id, checkpoint_id, Damaged(f"{where}: {exc!r}"))
            return out

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest first."""
        check_thread_id(thread_id)
        with self._lock, self._errors(f"read thread {thread_id!r} from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            if thread is None:
                return []
            if checkpoint_id is None:
                found = conn.execute(NEWEST, newest_params(thread, self._first)).fetchone()
            else:
                found = (self._seq(conn, thread, checkpoint_id),)
            if found is None or found[0] is None:
                if checkpoint_id is None:  # a thread's row is put with its first checkpoint
                    check_chain(self.path, thread_id, [], None)
                return []
            params = {"thread": thread, "seq": found[0]}
            newest = checkpoint_id is None
            keeps = functools.partial(self._last.keeps, thread_id, newest=newest)
            store = (self.path, self.serializer, self._values, (thread, thread_id))
            query, folded = CHAIN + " ORDER BY k.seq", self._lookups.folded
            read = read_rows(conn, *store, query, params, folded, keeps)
            chain = read.checkpoints
            check_chain(self.path, thread_id, chain, checkpoint_id)
            if chain:  # the next put may follow it (a fork's: see LastPuts.read)
                self._last.read(thread_id, chain[-1].checkpoint_id, *read[1:], newest)
            if checkpoint_id is None and chain:  # ... in one INSERT
                self._seqs[thread, chain[-1].checkpoint_id] = found[0]
                self._next_seq[thread] = next_seq(conn, range_start(thread, self._first))
            return chain

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        check_thread_id(thread_id)
        with self._lock, self._errors(f"read thread {thread_id!r} from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            if thread is None:
                return []
            query, params = self._lookups.thread_rows, newest_params(thread, self._first)
            store = (self.path, self.serializer, self._values, (thread, thread_id))
            folded = self._lookups.folded  # history: no snapshot compares with its lists
            return read_rows(conn, *store, query, params, folded, never_kept).checkpoints

    def newest_id(self, thread_id: str) -> str | None:
        """Return the id of the thread's newest checkpoint (``None``: it has none), unread."""
        check_thread_id(thread_id)
        with self._lock, self._errors(f"read thread {thread_id!r} from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            return None if thread is None else newest_id(conn, self.timeout_s, thread, self._first)

    # -- extras ------------------------------------------------------------------------

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        with self._lock, self._errors("read threads from"), self._read() as conn:
            return [name for (name,) in conn.execute("SELECT name FROM threads ORDER BY id")]

    def close(self) -> None:
        """Close the file; later calls raise ``CheckpointError``. Closing twice is harmless."""
        with self._lock:
            self._closed = True
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None  # a connection inherited through fork is dropped, not closed

    def __enter__(self) -> SqliteSaver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteSaver({self.path!r})"

    # -- opening -----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """Return this process's connection, opening (and checking) the file on first use."""
        if self._closed:
            msg = f"the SqliteSaver for {self.path!r} is closed; create a new one to go on"
            raise CheckpointError(msg, path=self.path)
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # First use, or a forked child: a SQLite connection must not cross a fork.
        self._conn = None
        self._seqs.clear()
        self._next_seq.clear()
        with self._errors("open"):
            conn = open_file(self.path, self.synchronous, self.timeout_s)
            self._first, self._lookups = first_range(conn), lookups(conn)
        self._conn, self._pid = conn, os.getpid()
        return conn

    # -- writing -----------------------------------------------------------------------

    def _put(
        self,
        conn: sqlite3.Connection,
        checkpoint: Checkpoint,
        writes: list[Any],
        *,
        ensure_ascii: bool,
    ) -> None:
        thread = self._threads.get(checkpoint.thread_id)
        start = None if thread is None else self._next_seq.get(thread)
        if start is not None and checkpoint.newest_read is None and current_fence() is None:
            assert thread is not None
            if self._put_numbered(conn, checkpoint, writes, ensure_ascii, thread, start):
                return
        new_blobs: dict[bytes, int] = {}
        with transaction(conn, timeout_s=self.timeout_s):
            thread = self._thread(conn, checkpoint.thread_id, create=True)
            assert thread is not None
            parent = self._parent(conn, thread, checkpoint)
            if checkpoint.newest_read is not None:
                self._fork(conn, thread, checkpoint, parent)
            if checkpoint.snapshot is not None:
                self._values.hash_reads(self._last.read_texts(checkpoint.thread_id))
            low = range_start(thread, self._first)
            rows = RowsAhead(next_seq(conn, low))
            packer = Packer(rows.store, self._blob_ids, new_blobs, ensure_ascii, self.serializer)
            packed = pack(packer, checkpoint, writes, self._last.get(checkpoint.thread_id))
            check_room(self.path, checkpoint.thread_id, low, rows)
            row = (thread, checkpoint.checkpoint_id, parent, *packed[:4])
            try:  # its triggers check the newest and drop the parent's pending writes
                insert_rows(conn, rows, row)
            except sqlite3.IntegrityError as exc:
                raise self._refused(conn, thread, checkpoint, exc) from None
        self._committed(checkpoint, thread, rows.checkpoint_seq, new_blobs, packed.last)

    def _put_numbered(
        self,
        conn: sqlite3.Connection,
        checkpoint: Checkpoint,
        writes: list[Any],
        ensure_ascii: bool,
        thread: int,
        start: int,
    ) -> bool:
        """Put ``checkpoint`` in one statement, its rows numbered from ``start`` (see
        :mod:`corral.checkpoint.sqlite._writing`); return ``False``, having written nothing,
        when another process took that seq."""
        parent = self._parent(conn, thread, checkpoint)
        if checkpoint.snapshot is not None:
            self._values.hash_reads(self._last.read_texts(checkpoint.thread_id))
        rows = RowsAhead(start)
        new_blobs: dict[bytes, int] = {}
        packer = Packer(rows.store, self._blob_ids, new_blobs, ensure_ascii, self.serializer)
        packed = pack(packer, checkpoint, writes, self._last.get(checkpoint.thread_id))
        check_room(self.path, checkpoint.thread_id, range_start(thread, self._first), rows)
        try:
            row = (thread, checkpoint.checkpoint_id, parent, *packed[:4])
            numbered_insert(conn, rows, row, self.timeout_s)
        except sqlite3.IntegrityError as exc:
            if taken_seq(exc):
                del self._next_seq[thread]
                return False
            raise self._refused(conn, thread, checkpoint, exc) from None
        self._committed(checkpoint, thread, rows.checkpoint_seq, new_blobs, packed.last)
        return True

    def _committed(
        self, checkpoint: Checkpoint, thread: int, seq: int, new_blobs: dict[bytes, int], last: Last
    ) -> None:
        """Remember a committed put (only then may the caches hold what it wrote)."""
        self._threads[checkpoint.thread_id] = thread
        self._known_blobs(new_blobs)
        if len(self._seqs) > _KNOWN_CACHE:
            self._seqs.clear()
        self._seqs[thread, checkpoint.checkpoint_id] = seq
        self._last.put(checkpoint.thread_id, last)
        self._next_seq[thread] = seq + 1

    def _refused(
        self, conn: sqlite3.Connection, thread: int, checkpoint: Checkpoint, exc: Exception
    ) -> CheckpointError:
        """Return the error for a checkpoint row SQLite refused: stale, or its id taken
        (the trigger's one message covers both; :meth:`_stale` tells which)."""
        if str(exc) == STALE:
            return self._stale(conn, thread, checkpoint)
        return taken(checkpoint, self.path)

    def _put_writes(
        self,
        conn: sqlite3.Connection,
        thread_id: str,
        checkpoint_id: str,
        task: int,
        tree: Any,
        *,
        ensure_ascii: bool,
    ) -> None:
        new_blobs: dict[bytes, int] = {}
        with transaction(conn, timeout_s=self.timeout_s):
            thread = self._thread(conn, thread_id, create=False)
            seq = None if thread is None else self._seq(conn, thread, checkpoint_id)
            if thread is None or seq is None:
                msg = (
                    f"cannot record a finished task after checkpoint {checkpoint_id!r}: thread "
                    f"{thread_id!r} has no such checkpoint; put the checkpoint first"
                )
                raise CheckpointError(msg, path=self.path)
            low = range_start(thread, self._first)
            rows = RowsAhead(next_seq(conn, low))
            packer = Packer(rows.store, self._blob_ids, new_blobs, ensure_ascii, self.serializer)
            record = packer.record(tree)
            check_room(self.path, thread_id, low, rows)
            insert_record(conn, rows, (thread, seq, task, record))
        self._known_blobs(new_blobs)
        if rows.texts:  # value rows at the thread's end: the next put numbers after them
            self._next_seq[thread] = rows.checkpoint_seq

    def _seq(self, conn: sqlite3.Connection, thread: int, checkpoint_id: str) -> int | None:
        """Return the seq of a committed checkpoint, or ``None`` when the thread has none."""
        seq = self._seqs.get((thread, checkpoint_id))
        if seq is not None:
            return seq
        low = range_start(thread, self._first)
        return seq_of(conn, self._lookups, self.timeout_s, thread, low, checkpoint_id)

    def _known_blobs(self, blobs: dict[bytes, int]) -> None:
        if len(self._blob_ids) + len(blobs) > _KNOWN_CACHE:
            self._blob_ids.clear()
        self._blob_ids.update(blobs)

    def _thread(self, conn: sqlite3.Connection, name: str, *, create: bool) -> int | None:
        known = self._threads.get(name)
        if known is not None:
            return known
        if create:
            conn.execute("INSERT OR IGNORE INTO threads (name) VALUES (?)", (name,))
        thread = thread_of(conn, self.path, name)
        if thread is not None and not create:
            self._threads[name] = thread  # read inside a transaction: it is committed
        return thread

    def _parent(self, conn: sqlite3.Connection, thread: int, checkpoint: Checkpoint) -> int | None:
        if checkpoint.parent_id is None:
            return None
        seq = self._seq(conn, thread, checkpoint.parent_id)
        if seq is None:
            raise unknown_parent(checkpoint, self.path)
        return seq

    def _fork(
        self, conn: sqlite3.Connection, thread: int, checkpoint: Checkpoint, parent: int | None
    ) -> None:
        """Point the thread's newest at a fork's parent (0: none), if the newest is still
        the one the writer read (the row's own trigger then accepts it, and clears it)."""
        assert checkpoint.newest_read is not None
        expected = self._seq(conn, thread, checkpoint.newest_read)
        (newest,) = conn.execute(NEWEST, newest_params(thread, self._first)).fetchone()
        if expected is None or newest != expected:
            raise self._stale(conn, thread, checkpoint)
        conn.execute("UPDATE threads SET newest = ? WHERE id = ?", (parent or 0, thread))

    def _stale(
        self, conn: sqlite3.Connection, thread: int, checkpoint: Checkpoint
    ) -> CheckpointError:
        """Return the error for a refused put: a taken id, else ``ConcurrentRunError``."""
        if self._seq(conn, thread, checkpoint.checkpoint_id) is not None:
            return taken(checkpoint, self.path)
        newest = newest_id(conn, self.timeout_s, thread, self._first)
        return stale_parent(checkpoint, newest, self.path)

    # -- reading -----------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """Yield the connection inside a read transaction: one consistent, committed view."""
        conn = self._connection()
        with transaction(conn, read=True, timeout_s=self.timeout_s):
            yield conn

    def _errors(self, verb: str) -> AbstractContextManager[None]:
        """Turn SQLite's errors into ``CheckpointError`` naming the file and a way out."""
        return sqlite_errors(self.path, self.timeout_s, verb)
