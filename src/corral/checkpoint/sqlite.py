"""``SqliteSaver``: checkpoints in one SQLite file (the embedded default).

Layout. ``checkpoints`` is one table of two kinds of rows, numbered by ``seq`` in the order
they were put: a *checkpoint* row (its thread, a small integer from ``threads``; its id;
its parent, the parent row's ``seq``; and three JSON texts, the snapshot (or NULL), the
writes and the meta) and a *value* row (``data``: the JSON of one stored value, with
``thread`` NULL). A put appends the values its checkpoint stores and then the checkpoint
itself to the end of that one table, and one entry to the index of checkpoint ids: two
pages written per superstep, where a separate table of values made it three. Rows of a
thread are found through that index; the newest one is the largest ``seq`` among the
thread's entries (an index scan that grows with the thread, once per ``chain``).
The view ``blobs`` shows the value rows.

``pending_writes`` holds the finished tasks of a superstep whose checkpoint is not written
yet, keyed ``(thread, seq of the checkpoint the superstep started from, task)``; putting
the next checkpoint of that parent deletes them in the same transaction.

Storing values once. A value whose JSON is at least ``_MIN_BLOB`` bytes is kept in a value
row and the texts refer to it as ``{"$corral": <seq>}``; the process remembers the content
hash of every value it wrote or read, so the same value is not stored twice. A list is
split into its items (a list of stored items is written as runs of ids, ``{"$corral":
"refs", "v": [[first, count], [first, count, step], ...]}``); a dict only from
``_SPLIT_DICT`` bytes on, so a small record (a chat message) is stored, and shared, whole. A
snapshot therefore refers to the items the earlier writes stored instead of copying them,
and the file grows with the new data of each step although every K-th checkpoint holds the
whole state. Two more savings keep the per-step cost flat: a snapshot re-uses the previous
snapshot's packing of list items that are the same objects and still equal, and a meta is
stored as the keys that changed since its parent when this process wrote the parent
(``meta_is_delta``); a snapshot row always has its full meta, so every chain
starts from one.

Safety. The file is in WAL mode; every ``put`` is one ``BEGIN IMMEDIATE`` transaction
(one writer at a time across processes, others wait up to ``timeout_s``); readers read in a
transaction of their own and see only committed checkpoints. Rows and blobs are never updated
or deleted, so whatever a process has cached about them stays true. The file carries an
``application_id`` and a ``corral_schema`` version row: a file corral did not write, or a
damaged one, raises ``CheckpointError`` naming the path, never a silent reset.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from json.encoder import encode_basestring_ascii as _encode_str
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, NamedTuple

from corral.checkpoint.base import Checkpoint
from corral.checkpoint.serde import (
    TAG,
    Serializer,
    decode,
    decode_checkpoint,
    encode,
    encode_record,
)
from corral.errors import CheckpointError

__all__ = ["SCHEMA_VERSION", "SqliteSaver"]

SCHEMA_VERSION: Final = 2
"""The layout version this corral writes and reads."""
_APPLICATION_ID: Final = 0x4352524C
"""``PRAGMA application_id`` of a corral file ("CRRL")."""
_MIN_BLOB: Final = 128
"""JSON texts shorter than this stay inline: a reference would save little."""
_SPLIT_DICT: Final = 4096
"""Dicts shorter than this are stored whole; longer ones are split into their values."""
_FEW: Final = 4
"""Lists and dicts this short are split into their items without first encoding them whole."""
_SMALL_ITEMS: Final = 32
"""Lists whose items average fewer bytes than this are stored whole (numbers, short tags)."""
_BLOB_CACHE_BYTES: Final = 8 << 20
"""Bytes of blob text kept in memory for reading."""
_KNOWN_CACHE: Final = 200_000
"""Hashes of committed blobs (and checkpoint ids) remembered before the caches are cleared."""
_LAST_THREADS: Final = 64
"""Threads whose last checkpoint this process remembers, to write the next one as a delta."""

_PENDING = """
CREATE TABLE IF NOT EXISTS pending_writes (
    thread INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    task INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (thread, seq, task)
) WITHOUT ROWID
"""
"""Finished tasks of a superstep whose checkpoint is not written yet (created in older files)."""

_SCHEMA = (
    """
CREATE TABLE corral_schema (
    version INTEGER NOT NULL,
    written_by TEXT NOT NULL
);
CREATE TABLE threads (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE checkpoints (
    seq INTEGER PRIMARY KEY,
    thread INTEGER REFERENCES threads (id),
    checkpoint_id TEXT,
    parent INTEGER,
    snapshot TEXT,
    writes TEXT,
    meta TEXT,
    meta_is_delta INTEGER,
    data TEXT,
    CHECK ((thread IS NULL) = (data IS NOT NULL))
);
CREATE UNIQUE INDEX checkpoint_ids ON checkpoints (thread, checkpoint_id)
    WHERE thread IS NOT NULL;
CREATE VIEW blobs (id, data) AS SELECT seq, data FROM checkpoints WHERE thread IS NULL;
"""
    + _PENDING
)

_INSERT = """
INSERT INTO checkpoints (thread, checkpoint_id, parent, snapshot, writes, meta, meta_is_delta)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""

_INSERT_VALUE = "INSERT INTO checkpoints (data) VALUES (?)"

_ROW = """
SELECT k.seq, k.checkpoint_id, p.checkpoint_id, k.snapshot, k.writes, k.meta, k.meta_is_delta
FROM checkpoints AS k LEFT JOIN checkpoints AS p ON p.seq = k.parent
"""

_CHAIN = """
WITH RECURSIVE up(seq, parent, stop) AS (
    SELECT seq, parent, snapshot IS NOT NULL OR parent IS NULL
    FROM checkpoints WHERE seq = :seq AND thread = :thread
    UNION ALL
    SELECT c.seq, c.parent, c.snapshot IS NOT NULL OR c.parent IS NULL
    FROM checkpoints AS c JOIN up ON c.seq = up.parent AND c.thread = :thread
    WHERE NOT up.stop
)
""" + _ROW.replace(
    "FROM checkpoints AS k",
    "FROM up JOIN checkpoints AS k ON k.seq = up.seq AND k.thread = :thread",
)


class SqliteSaver:
    """A checkpointer backed by one SQLite file, safe for several processes at once.

    Args:
        path: the database file; its folder is created. ``":memory:"`` keeps it in memory.
        serializer: teaches the encoding values JSON cannot hold (see
            :class:`~corral.checkpoint.serde.Serializer`); pass the same one to read them.
        synchronous: ``"FULL"`` (default) syncs every checkpoint to disk, so a committed
            checkpoint survives a power cut; ``"NORMAL"`` syncs less often (in WAL mode a
            process crash still loses nothing, a power cut may lose the newest checkpoints).
        timeout_s: how long a writer waits for another process's transaction to finish.

    >>> with SqliteSaver(":memory:") as saver:
    ...     saver.put(Checkpoint("t", "1", None, {"n": 1}))
    ...     saver.put(Checkpoint("t", "2", "1", None, [("inc", {"n": 2})]))
    ...     [(c.checkpoint_id, c.writes) for c in saver.chain("t")]
    [('1', []), ('2', [('inc', {'n': 2})])]
    """

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
        self.serializer = serializer
        self.synchronous = synchronous
        self.timeout_s = timeout_s
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._closed = False
        self._threads: dict[str, int] = {}
        """Thread name -> row id, for threads known to be committed."""
        self._seqs: dict[tuple[int, str], int] = {}
        """(thread, checkpoint id) -> seq, for checkpoints known to be committed."""
        self._blob_ids: dict[bytes, int] = {}
        """Content hash -> blob id, for blobs known to be committed."""
        self._last: dict[str, _Last] = {}
        """Per thread, what this process put last (for meta deltas and snapshot reuse)."""
        self._blob_texts: OrderedDict[int, str] = OrderedDict()
        self._blob_bytes = 0
        with self._lock:
            self._connection()

    # -- the protocol ------------------------------------------------------------------

    def put(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` in one transaction.

        Raises:
            SerializationError: a value JSON cannot hold (the message names where it sits).
            CheckpointError: the id is already taken in the thread, the parent is unknown,
                or the file cannot be written.
        """
        # The snapshot and meta are encoded while packing: unchanged list items and plain
        # meta values skip the general encoder; so do updates of JSON values only (the
        # encoder would return an equal copy, and packing only reads them).
        serializer = self.serializer
        writes = [
            [
                node,
                update
                if _plain(update)
                else encode(
                    update, serializer=serializer, where="update", owner=f"written by {node!r}"
                ),
            ]
            for node, update in checkpoint.writes
        ]
        with self._lock:  # errors converted inline: a context manager costs ~1 us a put
            try:
                conn = self._connection()
                try:
                    self._put(conn, checkpoint, writes, ensure_ascii=False)
                except UnicodeEncodeError:
                    # A lone surrogate cannot be stored as UTF-8 text; escape every non-ASCII.
                    self._put(conn, checkpoint, writes, ensure_ascii=True)
            except sqlite3.DatabaseError as exc:
                raise self._error("write a checkpoint to", exc) from exc

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        """Save a finished task's ``record`` in one transaction (see ``TaskWrites``).

        Raises:
            SerializationError: a value JSON cannot hold (the message names where it sits).
            CheckpointError: the thread has no checkpoint ``checkpoint_id``, or the file
                cannot be written.
        """
        tree = encode_record(record, self.serializer)
        with self._lock, self._errors("record a finished task in"):
            conn = self._connection()
            try:
                self._put_writes(conn, thread_id, checkpoint_id, task, tree, ensure_ascii=False)
            except UnicodeEncodeError:
                self._put_writes(conn, thread_id, checkpoint_id, task, tree, ensure_ascii=True)

    def pending_writes(self, thread_id: str, checkpoint_id: str) -> dict[int, dict[str, Any]]:
        """Return the records of the finished tasks after ``checkpoint_id``, by task."""
        with self._lock, self._errors("read checkpoints from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            if thread is None:
                return {}
            seq = self._seq(conn, thread, checkpoint_id)
            if seq is None:
                return {}
            rows = conn.execute(
                "SELECT task, record FROM pending_writes WHERE thread = ? AND seq = ? "
                "ORDER BY task",
                (thread, seq),
            ).fetchall()
            resolve = self._resolver(conn)
            out: dict[int, dict[str, Any]] = {}
            for task, text in rows:
                where = f"task {task} after checkpoint {checkpoint_id!r}"
                try:
                    tree = json.loads(text)
                except ValueError as exc:
                    msg = (
                        f"the record of {where} of thread {thread_id!r} in {self.path!r} is "
                        f"damaged ({exc}); resume from an earlier checkpoint or a new thread"
                    )
                    raise CheckpointError(msg, path=self.path) from exc
                out[int(task)] = decode(
                    tree, serializer=self.serializer, resolve=resolve, where=where
                )
            return out

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest first."""
        with self._lock, self._errors("read checkpoints from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            if thread is None:
                return []
            if checkpoint_id is None:
                found = conn.execute(
                    "SELECT max(seq) FROM checkpoints WHERE thread = ?", (thread,)
                ).fetchone()
            else:
                found = conn.execute(
                    "SELECT seq FROM checkpoints WHERE thread = ? AND checkpoint_id = ?",
                    (thread, checkpoint_id),
                ).fetchone()
            if found is None or found[0] is None:
                return []
            params = {"thread": thread, "seq": found[0]}
            rows = conn.execute(_CHAIN + " ORDER BY k.seq", params).fetchall()
            metas: dict[str, Any] = {}
            return [self._decode(conn, thread_id, row, metas) for row in rows]

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        with self._lock, self._errors("read checkpoints from"), self._read() as conn:
            thread = self._thread(conn, thread_id, create=False)
            if thread is None:
                return []
            rows = conn.execute(_ROW + " WHERE k.thread = ? ORDER BY k.seq", (thread,))
            metas: dict[str, Any] = {}
            return [self._decode(conn, thread_id, row, metas) for row in rows.fetchall()]

    # -- extras ------------------------------------------------------------------------

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        with self._lock, self._errors("read threads from"), self._read() as conn:
            rows = conn.execute("SELECT name FROM threads ORDER BY id").fetchall()
            return [name for (name,) in rows]

    def close(self) -> None:
        """Close the file; later calls raise ``CheckpointError``. Closing twice is harmless."""
        with self._lock:
            self._closed = True
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None  # a connection inherited through fork is dropped, not closed

    def __enter__(self) -> SqliteSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
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
        with self._errors("open"):
            conn = self._open()
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        in_memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        if not in_memory:
            folder = Path(self.path).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                msg = f"cannot create the folder {str(folder)!r} for checkpoints: {exc}"
                raise CheckpointError(msg, path=self.path) from exc
            if Path(self.path).is_dir():
                msg = f"{self.path!r} is a folder; give SqliteSaver a file path"
                raise CheckpointError(msg, path=self.path)
        # Switching a new file to WAL (or reading it while another process does) can be
        # refused at once with SQLITE_BUSY, without the busy timeout; so opening retries.
        deadline = time.monotonic() + self.timeout_s
        pause = 0.001
        while True:
            conn = sqlite3.connect(
                self.path,
                timeout=self.timeout_s,
                isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE ... COMMIT
                check_same_thread=False,  # ainvoke may call from worker threads; see _lock
            )
            try:
                self._prepare(conn, in_memory)
            except sqlite3.OperationalError as exc:
                conn.close()
                if not _busy(exc) or time.monotonic() >= deadline:
                    raise
            except BaseException:
                conn.close()
                raise
            else:
                return conn
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _prepare(self, conn: sqlite3.Connection, in_memory: bool) -> None:
        self._check_header(conn)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal" and not in_memory:
            msg = (
                f"cannot put {self.path!r} in WAL mode (SQLite answered {mode!r}); "
                "keep checkpoints on a local disk, not a network share"
            )
            raise CheckpointError(msg, path=self.path)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        self._ensure_schema(conn)

    def _check_header(self, conn: sqlite3.Connection) -> None:
        """Refuse a file that is not SQLite, or is SQLite written by something else."""
        own = not conn.in_transaction  # one read transaction: another process may be
        try:  # creating the schema right now, and both facts must come from one moment
            if own:
                conn.execute("BEGIN")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = [
                name
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"
                )
            ]
            if own:
                conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if own and conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and _busy(exc):
                raise
            msg = (
                f"{self.path!r} is not a corral checkpoint database (SQLite says: {exc}); "
                "pass a new path, or move the file away if it is damaged"
            )
            raise CheckpointError(msg, path=self.path) from exc
        if app_id == _APPLICATION_ID or (app_id == 0 and not tables):
            return
        shown = ", ".join(repr(t) for t in tables[:5]) + (", ..." if len(tables) > 5 else "")
        msg = (
            f"{self.path!r} is a SQLite database that corral did not create "
            f"(application_id={app_id}, tables: {shown or 'none'}); "
            "give SqliteSaver a path of its own"
        )
        raise CheckpointError(msg, path=self.path)

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        """Create the tables in a new file, or check the version of an existing one."""
        conn.execute("BEGIN IMMEDIATE")  # two processes opening a new file: one creates
        try:
            self._check_header(conn)  # another process may have written it meanwhile
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id == 0:
                from corral import __version__

                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO corral_schema VALUES (?, ?)",
                    (SCHEMA_VERSION, f"corral {__version__}"),
                )
                conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
            else:
                self._check_version(conn)
                conn.execute(_PENDING)  # a file written before pending writes existed
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _check_version(self, conn: sqlite3.Connection) -> None:
        try:
            row = conn.execute("SELECT version, written_by FROM corral_schema").fetchone()
        except sqlite3.DatabaseError as exc:
            msg = (
                f"{self.path!r} is marked as a corral database but has no readable schema "
                f"version ({exc}); the file is damaged, move it away and start a new one"
            )
            raise CheckpointError(msg, path=self.path) from exc
        if row is None or row[0] != SCHEMA_VERSION:
            version, writer = row if row is not None else (None, "an unknown writer")
            msg = (
                f"{self.path!r} holds checkpoints in layout version {version!r} "
                f"(written by {writer}); this corral reads version {SCHEMA_VERSION}: "
                "use the corral version that wrote them, or a new path"
            )
            raise CheckpointError(msg, path=self.path)

    # -- writing -----------------------------------------------------------------------

    def _put(
        self,
        conn: sqlite3.Connection,
        checkpoint: Checkpoint,
        writes: list[Any],
        *,
        ensure_ascii: bool,
    ) -> None:
        new_blobs: dict[bytes, int] = {}
        new_thread: int | None = None
        last = self._last.get(checkpoint.thread_id)
        conn.execute("BEGIN IMMEDIATE")
        try:
            thread = self._thread(conn, checkpoint.thread_id, create=True)
            assert thread is not None
            if checkpoint.thread_id not in self._threads:
                new_thread = thread
            parent = self._parent(conn, thread, checkpoint)
            packer = _Packer(conn, self._blob_ids, new_blobs, ensure_ascii, self.serializer)
            snapshot_text, lists = None, None
            if checkpoint.snapshot is not None:
                earlier = last.lists if last is not None else {}
                snapshot_text, lists = packer.snapshot(checkpoint.snapshot, earlier)
            meta_texts = packer.meta_texts(checkpoint.meta)
            row = (
                thread,
                checkpoint.checkpoint_id,
                parent,
                snapshot_text,
                "["
                + ",".join([f"[{packer.dumps(n)},{packer.fields(u)}]" for n, u in writes])
                + "]",
                *_meta_text(meta_texts, checkpoint, last),
            )
            try:
                seq = conn.execute(_INSERT, row).lastrowid
                assert seq is not None
            except sqlite3.IntegrityError as exc:
                msg = (
                    f"checkpoint {checkpoint.checkpoint_id!r} already exists in thread "
                    f"{checkpoint.thread_id!r}; give every checkpoint of a thread a new id"
                )
                raise CheckpointError(msg, path=self.path) from exc
            if parent is not None:  # the parent's superstep is now in this checkpoint
                conn.execute(
                    "DELETE FROM pending_writes WHERE thread = ? AND seq = ?", (thread, parent)
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        # Only now is it all committed, so only now may the caches remember it.
        if new_thread is not None:
            self._threads[checkpoint.thread_id] = new_thread
        self._known_blobs(new_blobs)
        if len(self._seqs) > _KNOWN_CACHE:
            self._seqs.clear()
        self._seqs[thread, checkpoint.checkpoint_id] = int(seq)
        self._last.pop(checkpoint.thread_id, None)
        if len(self._last) >= _LAST_THREADS:
            del self._last[next(iter(self._last))]
        self._last[checkpoint.thread_id] = _Last(
            checkpoint.checkpoint_id,
            meta_texts,
            lists if lists is not None else last.lists if last is not None else {},
        )

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
        conn.execute("BEGIN IMMEDIATE")
        try:
            thread = self._thread(conn, thread_id, create=False)
            seq = None if thread is None else self._seq(conn, thread, checkpoint_id)
            if thread is None or seq is None:
                msg = (
                    f"cannot record a finished task after checkpoint {checkpoint_id!r}: thread "
                    f"{thread_id!r} has no such checkpoint; put the checkpoint first"
                )
                raise CheckpointError(msg, path=self.path)
            packer = _Packer(conn, self._blob_ids, new_blobs, ensure_ascii, self.serializer)
            conn.execute(
                "INSERT OR REPLACE INTO pending_writes (thread, seq, task, record) "
                "VALUES (?, ?, ?, ?)",
                (thread, seq, task, packer.record(tree)),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._known_blobs(new_blobs)

    def _seq(self, conn: sqlite3.Connection, thread: int, checkpoint_id: str) -> int | None:
        """Return the seq of a committed checkpoint, or ``None`` when the thread has none."""
        seq = self._seqs.get((thread, checkpoint_id))
        if seq is not None:
            return seq
        row = conn.execute(
            "SELECT seq FROM checkpoints WHERE thread = ? AND checkpoint_id = ?",
            (thread, checkpoint_id),
        ).fetchone()
        return None if row is None else int(row[0])

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
        row = conn.execute("SELECT id FROM threads WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        if not create:
            self._threads[name] = row[0]  # read inside a transaction: it is committed
        return int(row[0])

    def _parent(self, conn: sqlite3.Connection, thread: int, checkpoint: Checkpoint) -> int | None:
        if checkpoint.parent_id is None:
            return None
        seq = self._seq(conn, thread, checkpoint.parent_id)
        if seq is None:
            msg = (
                f"checkpoint {checkpoint.checkpoint_id!r} names parent "
                f"{checkpoint.parent_id!r}, which thread {checkpoint.thread_id!r} does not "
                "have; put the parent first (or pass parent_id=None to start the thread)"
            )
            raise CheckpointError(msg, path=self.path)
        return seq

    # -- reading -----------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """Yield the connection inside a read transaction: one consistent, committed view."""
        conn = self._connection()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _decode(
        self,
        conn: sqlite3.Connection,
        thread_id: str,
        row: tuple[Any, ...],
        metas: dict[str, Any],
    ) -> Checkpoint:
        """Decode one row; ``metas`` holds the meta of the rows decoded before it (by id)."""
        _seq, checkpoint_id, parent_id, snapshot, writes, meta, meta_is_delta = row
        try:
            trees = [None if snapshot is None else json.loads(snapshot), json.loads(writes)]
            meta_tree = json.loads(meta)
            if meta_is_delta:
                delta = meta_tree if meta_tree.get(TAG) == "delta" else {"v": meta_tree}
                meta_tree = {**metas[parent_id], **delta["v"]}
                for key in delta.get("del", ()):
                    meta_tree.pop(key, None)
            metas[checkpoint_id] = meta_tree
            trees.append(meta_tree)
        except (ValueError, KeyError, TypeError) as exc:
            msg = (
                f"checkpoint {checkpoint_id!r} of thread {thread_id!r} in {self.path!r} is "
                f"damaged ({exc!r}); resume from an earlier checkpoint or start a new thread"
            )
            raise CheckpointError(msg, path=self.path) from exc
        return decode_checkpoint(
            (thread_id, checkpoint_id, parent_id),
            *trees,
            serializer=self.serializer,
            resolve=self._resolver(conn),
        )

    def _resolver(self, conn: sqlite3.Connection) -> Callable[[int], Any]:
        def resolve(blob_id: int) -> Any:
            text = self._blob_texts.get(blob_id)
            if text is None:
                row = conn.execute(
                    "SELECT data FROM checkpoints WHERE seq = ?", (blob_id,)
                ).fetchone()
                if row is None or row[0] is None:
                    msg = (
                        f"{self.path!r} is damaged: stored value {blob_id} is missing; "
                        "resume from an earlier checkpoint or start a new thread"
                    )
                    raise CheckpointError(msg, path=self.path)
                text = str(row[0])
                self._remember(blob_id, text)
                # Whatever this process has read it can share: a resumed run's next
                # snapshot refers to the items its chain already stored.
                self._blob_ids[_digest(text)] = blob_id
            else:
                self._blob_texts.move_to_end(blob_id)
            try:
                return json.loads(text)
            except ValueError as exc:
                msg = f"{self.path!r} is damaged: stored value {blob_id} is not JSON ({exc})"
                raise CheckpointError(msg, path=self.path) from exc

        return resolve

    def _remember(self, blob_id: int, text: str) -> None:
        self._blob_texts[blob_id] = text
        self._blob_bytes += len(text)
        while self._blob_bytes > _BLOB_CACHE_BYTES and self._blob_texts:
            _, old = self._blob_texts.popitem(last=False)
            self._blob_bytes -= len(old)

    @contextmanager
    def _errors(self, verb: str) -> Iterator[None]:
        """Turn SQLite's errors into ``CheckpointError`` naming the file and a way out."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise self._error(verb, exc) from exc

    def _error(self, verb: str, exc: sqlite3.DatabaseError) -> CheckpointError:
        """Return the ``CheckpointError`` for an error of SQLite while doing ``verb``."""
        if isinstance(exc, sqlite3.OperationalError):
            if _busy(exc):
                msg = (
                    f"cannot {verb} {self.path!r}: another process held it for more than "
                    f"timeout_s={self.timeout_s}; raise timeout_s or run fewer writers at once"
                )
            else:
                msg = f"cannot {verb} {self.path!r}: {exc}"
        else:
            msg = (
                f"cannot {verb} {self.path!r}: {exc}; the file is damaged or not a corral "
                "database: move it away (resume is impossible from it) or pass a new path"
            )
        return CheckpointError(msg, path=self.path)


class _Packer:
    """Turns encoded trees into JSON text, storing large values once in ``blobs``."""

    __slots__ = ("conn", "dumps", "known", "new", "serializer")

    def __init__(
        self,
        conn: sqlite3.Connection,
        known: dict[bytes, int],
        new: dict[bytes, int],
        ensure_ascii: bool,
        serializer: Serializer | None,
    ) -> None:
        self.conn = conn
        self.known = known
        self.new = new
        self.serializer = serializer
        self.dumps = _DUMPS_ASCII if ensure_ascii else _DUMPS

    def text(self, tree: Any) -> str:
        """Return ``tree`` as JSON, or a reference when it is large enough to share."""
        return self.item(tree)[0]

    def item(self, tree: Any) -> tuple[str, int | None]:
        """Return ``(json, blob id or None)`` for ``tree``: inline when small, else stored."""
        if type(tree) is list and 0 < len(tree) <= _FEW:
            # A short list (a node's update, usually) is split without encoding it whole.
            text = self.list_text([self.item(x) for x in tree])
            if len(text) < _MIN_BLOB:
                return text, None
            blob_id = self.blob(text)
            return _ref(blob_id), blob_id
        text = self.dumps(tree)
        if len(text) < _MIN_BLOB:
            return text, None
        kind = type(tree)
        if kind is list and len(text) >= _SMALL_ITEMS * len(tree):
            text = self.list_text([self.item(x) for x in tree])
        elif kind is dict and len(text) >= _SPLIT_DICT:
            text = self.fields(tree)
        if len(text) < _MIN_BLOB:
            return text, None
        blob_id = self.blob(text)
        return _ref(blob_id), blob_id

    def list_text(self, items: list[tuple[str, int | None]]) -> str:
        """Return a list's JSON from its items; a list of stored items as ranges of ids."""
        if len(items) > 1 and all(blob_id is not None for _, blob_id in items):
            return f'{{"{TAG}":"refs","v":{self.dumps(_ranges(items))}}}'
        return "[" + ",".join([text for text, _ in items]) + "]"

    def meta_texts(self, meta: Any) -> dict[str, str] | str:
        """Return the JSON of each value of a meta dict, or the whole JSON of another value."""
        serializer = self.serializer
        if type(meta) is not dict or TAG in meta or not _STR.issuperset(map(type, meta)):
            return self.text(encode(meta, serializer=serializer, where="meta"))
        texts: dict[str, str] = {}
        for k, v in meta.items():
            kind = type(v)  # the runtime's meta is mostly ints and short strings
            if kind is int:
                texts[k] = int.__repr__(v)
            elif kind is str and len(v) < _MIN_BLOB:
                texts[k] = _encode_str(v)
            else:
                texts[k] = (
                    _scalar_json(v)
                    or self.short(v)
                    or self.text(encode(v, serializer=serializer, where=f"meta[{k!r}]"))
                )
        return texts

    def short(self, value: Any) -> str | None:
        """Return the JSON of a plain value (JSON types only) when it stays inline, else None.

        The runtime's meta is mostly small lists and dicts of names and counts; for those
        the encoder and the packer would produce exactly this text, at several times the
        cost.
        """
        if not _plain(value):
            return None
        text: str = self.dumps(value)
        return text if len(text) < _MIN_BLOB else None

    def record(self, tree: Any) -> str:
        """Return a task record as JSON; its update is packed as a checkpoint's writes are,
        so the values it stores once are the ones the superstep's checkpoint refers to."""
        if type(tree) is not dict or TAG in tree:
            return self.text(tree)
        return (
            "{"
            + ",".join(
                [
                    f"{_encode_str(k)}:{self.fields(v) if k == 'update' else self.text(v)}"
                    for k, v in tree.items()
                ]
            )
            + "}"
        )

    def fields(self, tree: dict[str, Any]) -> str:
        """Return a dict as JSON with each value through :meth:`text` (the dict stays inline)."""
        if type(tree) is not dict:  # not an update the runtime writes, but stored all the same
            return self.text(tree)
        dumps = self.dumps
        if len(tree) > _FEW:
            whole: str = dumps(tree)
            if len(whole) < _MIN_BLOB:
                return whole
        return "{" + ",".join([f"{_encode_str(k)}:{self.text(v)}" for k, v in tree.items()]) + "}"

    def snapshot(
        self, state: dict[str, Any], earlier: dict[str, _List]
    ) -> tuple[str, dict[str, _List]]:
        """Encode and pack a state; a list's items that ``earlier`` packed are not redone.

        An item is reused when it is the very object the previous snapshot of the thread
        held at that index *and* still equals what was stored for it then, so a list that
        grows by appending costs only its new items. Returns the JSON and what to remember.
        """
        if not all(type(k) is str for k in state) or TAG in state:
            return self.text(encode(state, serializer=self.serializer, where="state")), {}
        parts: list[str] = []
        lists: dict[str, _List] = {}
        for key, value in state.items():
            where = f"state[{key!r}]"
            if type(value) is list:
                raw, trees, items, ranges = self.reuse(value, earlier.get(key))
                for i in range(len(raw), len(value)):
                    tree = encode(value[i], serializer=self.serializer, where=f"{where}[{i}]")
                    raw.append(value[i])
                    trees.append(tree)
                    item = self.item(tree)
                    items.append(item)
                    if ranges is not None:
                        if item[1] is None:
                            ranges = None
                        else:
                            _extend(ranges, item[1])
                lists[key] = (raw, trees, items, ranges)
                if ranges is not None and len(items) > 1:
                    text = f'{{"{TAG}":"refs","v":{self.dumps(ranges)}}}'
                else:
                    text = self.list_text(items)
                if len(text) >= _MIN_BLOB:
                    text = _ref(self.blob(text))
            else:
                text = self.text(encode(value, serializer=self.serializer, where=where))
            parts.append(f"{self.dumps(key)}:{text}")
        return "{" + ",".join(parts) + "}", lists

    @staticmethod
    def reuse(value: list[Any], before: _List | None) -> _List:
        """Return the packing of the longest prefix of ``value`` that ``before`` holds: the
        same objects, still equal to what was stored for them (checked by C loops when the
        whole earlier list is a prefix, the usual append-only case)."""
        if before is None:
            return [], [], [], []
        old_raw, old_trees, old_items, old_ranges = before
        count = len(old_raw)
        if (
            count <= len(value)
            and all(map(_is, value, old_raw))
            and _same(value[:count], old_trees)
        ):
            ranges = None if old_ranges is None else [run.copy() for run in old_ranges]
            return old_raw.copy(), old_trees.copy(), old_items.copy(), ranges
        n = 0
        for x, old, tree in zip(value, old_raw, old_trees, strict=False):
            if x is not old or not _same(x, tree):
                break
            n += 1
        items = old_items[:n]
        ranges = [] if all(blob_id is not None for _, blob_id in items) else None
        if ranges is not None:
            for _, blob_id in items:
                assert blob_id is not None
                _extend(ranges, blob_id)
        return old_raw[:n], old_trees[:n], items, ranges

    def blob(self, text: str) -> int:
        """Store ``text`` once (as far as this process knows) and return its id."""
        digest = _digest(text)
        blob_id = self.known.get(digest) or self.new.get(digest)
        if blob_id is None:
            cursor = self.conn.execute(_INSERT_VALUE, (text,))
            assert cursor.lastrowid is not None
            blob_id = self.new[digest] = cursor.lastrowid
        return blob_id


_List = tuple[list[Any], list[Any], list[tuple[str, int | None]], list[list[int]] | None]
"""What a snapshot remembers of one list: the items, their encoded trees and packed JSON,
and the runs of ids of the stored items (``None`` when an item is inline)."""


class _Last(NamedTuple):
    """What this process last put in a thread, to pack the next checkpoint against it."""

    checkpoint_id: str
    meta: dict[str, str] | str
    """The JSON of each meta value (or of the whole meta when it is not a plain dict)."""
    lists: dict[str, _List]
    """The lists of the thread's last snapshot, for :meth:`_Packer.snapshot`."""


def _meta_text(
    texts: dict[str, str] | str, checkpoint: Checkpoint, last: _Last | None
) -> tuple[str, bool]:
    """Return the meta's JSON and whether it is a delta: only the keys that changed since
    the parent when this process wrote the parent; in full on a snapshot (so every chain
    starts from a full meta). Removed keys make it ``{"$corral": "delta", "v": ..., "del":
    [...]}``."""
    if isinstance(texts, str):
        return texts, False
    if (
        last is None
        or checkpoint.snapshot is not None
        or checkpoint.parent_id != last.checkpoint_id
        or isinstance(last.meta, str)
    ):
        return "{" + ",".join([f"{_encode_str(k)}:{t}" for k, t in texts.items()]) + "}", False
    before = last.meta
    changed = ",".join([f"{_encode_str(k)}:{t}" for k, t in texts.items() if before.get(k) != t])
    gone = [k for k in before if k not in texts]
    if gone:
        return f'{{"{TAG}":"delta","v":{{{changed}}},"del":{json.dumps(gone)}}}', True
    return "{" + changed + "}", True


def _scalar_json(value: Any) -> str | None:
    """Return the JSON of a str, int, bool or None cheaply (no encoder call), else None."""
    kind = type(value)
    if kind is str and len(value) < _MIN_BLOB:
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if (kind is list or kind is dict) and not value:
        return "[]" if kind is list else "{}"
    return None


_PLAIN_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_STR: Final = frozenset({str})


def _dumps_of(ensure_ascii: bool) -> Callable[[Any], str]:
    """Return a compact JSON encoder for encoded trees (plain JSON values, no cycles).

    ``json.JSONEncoder.encode`` builds a new C encoder on every call, which costs more
    than encoding a small value; this builds it once. The trees come from the encoder in
    :mod:`corral.checkpoint.serde` (or pass :func:`_plain`), so they hold no cycles and
    the circular-reference check is left out, as ``check_circular=False`` would.
    """
    slow = json.JSONEncoder(
        ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=True, check_circular=False
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python without the _json accelerator
        return slow.encode
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    fast = make(None, slow.default, quote, None, ":", ",", False, False, True)

    def dumps(tree: Any) -> str:
        return "".join(fast(tree, 0))

    return dumps


_DUMPS: Final = _dumps_of(ensure_ascii=False)
_DUMPS_ASCII: Final = _dumps_of(ensure_ascii=True)


def _plain(value: Any) -> bool:
    """Return whether ``value`` is made of JSON types only (the encoder leaves it as it is)."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    if kind is list:  # a list or dict of scalars is checked by one C loop
        return _PLAIN_SCALARS.issuperset(map(type, value)) or all(map(_plain, value))
    if kind is dict:
        return (
            TAG not in value
            and _STR.issuperset(map(type, value))
            and (
                _PLAIN_SCALARS.issuperset(map(type, value.values()))
                or all(map(_plain, value.values()))
            )
        )
    return False


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Return whether SQLite refused because another connection holds a lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _same(value: Any, tree: Any) -> bool:
    """Return whether ``value`` still equals the tree it was stored as (False if unsure)."""
    try:
        return bool(value == tree)
    except Exception:
        return False


def _ranges(items: list[tuple[str, int | None]]) -> list[list[int]]:
    """Return the ids of stored items as ``[first, count]`` runs of consecutive ids, or
    ``[first, count, step]`` runs of evenly spaced ids (a thread's values lie between its
    checkpoint rows, so the items its supersteps appended are usually two ids apart).

    >>> _ranges([("", 3), ("", 5), ("", 7), ("", 8), ("", 9)])
    [[3, 3, 2], [8, 2]]
    """
    ranges: list[list[int]] = []
    for _, blob_id in items:
        assert blob_id is not None
        _extend(ranges, blob_id)
    return ranges


def _extend(ranges: list[list[int]], blob_id: int) -> None:
    """Add ``blob_id`` to the runs of :func:`_ranges`."""
    last = ranges[-1] if ranges else None
    if last is None:
        ranges.append([blob_id, 1])
    elif last[1] == 1 and blob_id > last[0]:
        last[1] = 2
        if blob_id - last[0] != 1:
            last.append(blob_id - last[0])
    elif blob_id == last[0] + last[1] * (last[2] if len(last) > 2 else 1):
        last[1] += 1
    else:
        ranges.append([blob_id, 1])


_is: Final = operator.is_


def _ref(blob_id: int) -> str:
    return f'{{"{TAG}":{blob_id}}}'


def _digest(text: str) -> bytes:
    """Return the content hash of a blob's text."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
