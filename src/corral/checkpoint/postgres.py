"""``PostgresSaver``: checkpoints in PostgreSQL, shared by many processes on many machines.

Layout (tables prefixed ``corral_``, in the connection's schema). ``corral_threads`` has one
row per thread holding its *newest* checkpoint id; ``corral_checkpoints`` one row per
checkpoint (its id, its parent's id, and three JSON texts: the snapshot or NULL, the writes,
the meta); ``corral_blobs`` the large values stored once (as in
:class:`~corral.checkpoint.SqliteSaver`, whose packing this saver shares: a snapshot refers
to the list items earlier writes stored, so the bytes grow with the new data of each step);
``corral_pending`` the finished tasks of a superstep not yet checkpointed.

Compare-and-set in one statement. A put is a single SQL statement (so one round trip and
one transaction in autocommit mode) whose first part moves the thread's ``newest`` pointer
from the parent to the new id: ``UPDATE corral_threads SET newest = new WHERE name = thread
AND newest = parent`` (for a first checkpoint, an ``INSERT ... ON CONFLICT DO NOTHING``).
The blobs, the checkpoint row and the deletion of the superseded pending writes are
data-modifying CTEs that run only when that row was changed. The ``UPDATE`` takes the
thread's row lock, so of two runs writing against one parent the second waits for the
first to commit, re-reads the row, finds another ``newest`` and changes nothing: its put is
refused with :class:`~corral.errors.ConcurrentRunError`, and only then (on the error path)
a second query finds out which rule it broke. No update is ever lost, and a run that loses
learns it before running its next node.

Blob ids are handed out by a sequence that grows by ``_ID_BLOCK`` per ``nextval``: each
process takes a block and numbers its new values itself, so packing needs no round trip
and the values a thread appends get consecutive ids (which the packing writes as runs).

Schema. ``corral_schema`` holds the layout version; opening a database of a newer corral
raises ``CheckpointError``, an older one is migrated in a transaction holding an advisory
lock (so two processes opening a fresh database do not both create it).
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Final

from corral._where import check_conninfo
from corral.checkpoint._pg_schema import (
    CHAIN,
    PUT_FIRST,
    PUT_NEXT,
    PUT_WRITES,
    REFUSED,
    ROW,
    ensure_schema,
    error_for,
    redact,
)
from corral.checkpoint._stored import Damaged, Fetched, Run, StoredValues, run_ids
from corral.checkpoint.base import (
    Checkpoint,
    check_thread_id,
    current_fence,
    stale_parent,
    taken,
    unknown_parent,
)
from corral.checkpoint.serde import Serializer, decode, encode_checkpoint, encode_record
from corral.checkpoint.sqlite._reading import Read, damaged, decode_rows
from corral.checkpoint.sqlite.packing import Packer
from corral.checkpoint.sqlite.puts import LastPuts, encode_writes, pack
from corral.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresSaver"]

_ID_BLOCK: Final = 1024
"""Blob ids a process takes from the sequence at once (its ``INCREMENT BY``)."""
_KNOWN_CACHE: Final = 200_000
_LAST_THREADS: Final = 256

_OPEN_POOLS: set[ConnectionPool[Any]] = set()
"""The pools of savers not closed yet. Held here so a pool is never garbage-collected
while open: psycopg_pool closes a collected pool from whichever thread collected it, and
fails when that is one of its own workers. What is left open is closed at exit."""


def _close_open_pools() -> None:
    for pool in list(_OPEN_POOLS):
        pool.close()
    _OPEN_POOLS.clear()


atexit.register(_close_open_pools)


class _Ids:
    """Blob ids taken from the sequence in blocks; hands them out one by one."""

    def __init__(self) -> None:
        self.next = 0
        self.end = 0
        self.lock = threading.Lock()
        """Puts from several threads (a worker's runs) take ids from one block."""

    def take(self, conn: psycopg.Connection[Any]) -> int:
        with self.lock:
            if self.next >= self.end:
                row = conn.execute("SELECT nextval('corral_blob_ids')").fetchone()
                assert row is not None
                self.next, self.end = int(row[0]), int(row[0]) + _ID_BLOCK
            self.next += 1
            return self.next - 1


class _BlobRows:
    """The ``store`` of a :class:`Packer`: collects the new values and numbers them from a
    block of ids, so they are written with the checkpoint itself."""

    def __init__(self, conn: psycopg.Connection[Any], ids: _Ids) -> None:
        self.conn = conn
        self.ids = ids
        self.rows: list[tuple[int, str]] = []

    def store(self, text: str) -> int:
        blob_id = self.ids.take(self.conn)
        self.rows.append((blob_id, text))
        return blob_id


class PostgresSaver:
    """A checkpointer backed by PostgreSQL, safe for many processes on many machines.

    Args:
        conninfo: a ``postgresql://`` URL or libpq ``key=value`` string, or a
            ``psycopg_pool.ConnectionPool`` of your own (its connections are switched to
            autocommit; each put is one statement).
        serializer: teaches the encoding values JSON cannot hold.
        max_size: the most connections the saver's own pool opens (one per thread that
            writes at once; a worker with ``--concurrency N`` needs ``N`` and one more).
        timeout_s: how long a call waits for a connection (e.g. while the server restarts).

    Needs the ``postgres`` extra: ``pip install 'corral[postgres]'``.
    """

    fresh_reads: ClassVar[bool] = True
    """Every read decodes afresh: what it returns is the caller's (see ``reads_fresh``)."""

    def __init__(
        self,
        conninfo: str | ConnectionPool[Any],
        *,
        serializer: Serializer | None = None,
        max_size: int = 8,
        timeout_s: float = 30.0,
    ) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - the dev extra has both
            msg = "PostgresSaver needs psycopg 3; install it with pip install 'corral[postgres]'"
            raise CheckpointError(msg) from exc
        self.serializer = serializer
        self.timeout_s = timeout_s
        self._own_pool = isinstance(conninfo, str)
        if isinstance(conninfo, str):
            check_conninfo(conninfo)  # the driver's own error would repeat the password
            self.where = redact(conninfo)
            try:  # a clear error now (server down, no such database), not at the first put
                with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
                    ensure_schema(conn, self.where)
            except psycopg.Error as exc:
                raise error_for("connect to", self.where, exc) from exc
            self.pool: ConnectionPool[Any] = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=max_size,
                kwargs={"autocommit": True},
                timeout=timeout_s,
                name="corral",
                open=True,
            )
            _OPEN_POOLS.add(self.pool)
        else:
            self.pool = conninfo
            self.where = redact(str(conninfo.conninfo))
            with self._connection("connect to") as conn:
                ensure_schema(conn, self.where)
        self._lock = threading.Lock()
        self._ids = _Ids()
        self._blob_ids: dict[bytes, int] = {}
        self._last = LastPuts(_LAST_THREADS)
        self._values = StoredValues(self._blob_ids)
        self._closed = False

    # -- the protocol ------------------------------------------------------------------

    def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
        """Return whether the next checkpoint should carry a snapshot (see ``SnapshotAdvice``)."""
        return self._last.wants_snapshot(thread_id, checkpoint_id)

    def put(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` in one statement, if its parent is still the thread's newest.

        Raises:
            ConcurrentRunError: another run of the thread committed first.
            SerializationError: a value JSON cannot hold (the message names where it sits).
            CheckpointError: the id is taken, the parent unknown, or the server unreachable.
        """
        check_thread_id(checkpoint.thread_id)
        writes = encode_writes(checkpoint, self.serializer)
        with self._connection("write a checkpoint to") as conn, _fenced(conn):
            try:
                self._put(conn, checkpoint, writes, ensure_ascii=False)
            except UnicodeEncodeError:  # a lone surrogate: escape every non-ASCII character
                self._put(conn, checkpoint, writes, ensure_ascii=True)
            except (ValueError, RecursionError):
                # Packing met what the shortcuts let through (an int too long for JSON):
                # the general encoder names where it sits, as in SqliteSaver.
                encode_checkpoint(checkpoint, self.serializer)
                raise

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        """Save a finished task's ``record`` (see ``TaskWrites``)."""
        check_thread_id(thread_id)
        tree = encode_record(record, self.serializer)
        with self._connection("record a finished task in") as conn, _fenced(conn):
            for ascii_only in (False, True):
                sink = _BlobRows(conn, self._ids)
                packer = Packer(sink.store, self._blob_ids, {}, ascii_only, self.serializer)
                try:
                    text = packer.record(tree)
                    cur = conn.execute(
                        PUT_WRITES,
                        {
                            "thread": thread_id,
                            "id": checkpoint_id,
                            "task": task,
                            "record": text,
                            **_blob_params(sink),
                        },
                    )
                except UnicodeEncodeError:
                    continue
                break
            if cur.rowcount == 0:
                msg = (
                    f"cannot record a finished task after checkpoint {checkpoint_id!r}: thread "
                    f"{thread_id!r} has no such checkpoint; put the checkpoint first"
                )
                raise CheckpointError(msg, path=self.where)
            self._known(packer.new)

    def pending_writes(self, thread_id: str, checkpoint_id: str) -> dict[int, dict[str, Any]]:
        """Return the records of the finished tasks after ``checkpoint_id``, by task."""
        check_thread_id(thread_id)
        with self._connection("read checkpoints from") as conn:
            rows = conn.execute(
                "SELECT task, record FROM corral_pending WHERE thread = %s AND checkpoint_id = %s"
                " ORDER BY task",
                (thread_id, checkpoint_id),
            ).fetchall()
            fetch = self._values.fetcher(_texts_of(conn))
            out: dict[int, dict[str, Any]] = {}
            for task, text in rows:
                where = f"task {task} after checkpoint {checkpoint_id!r}"
                try:
                    tree = json.loads(text)
                    out[int(task)] = decode(
                        tree, serializer=self.serializer, fetch=fetch, where=where
                    )
                except CheckpointError:
                    raise
                except Exception as exc:
                    damaged(self.where, thread_id, checkpoint_id, Damaged(f"{where}: {exc!r}"))
            return out

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints from the nearest snapshot to ``checkpoint_id``, oldest first."""
        check_thread_id(thread_id)
        with self._connection("read checkpoints from") as conn:
            rows = conn.execute(CHAIN, {"thread": thread_id, "id": checkpoint_id}).fetchall()
            read = self._decode(conn, thread_id, rows)
            if read.checkpoints:  # the next put may follow it (a fork's: see LastPuts.read)
                newest = checkpoint_id is None
                self._last.read(thread_id, read.checkpoints[-1].checkpoint_id, *read[1:], newest)
            return read.checkpoints

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first."""
        check_thread_id(thread_id)
        with self._connection("read checkpoints from") as conn:
            rows = conn.execute(
                f"SELECT {ROW} FROM corral_checkpoints WHERE thread = %s ORDER BY seq",
                (thread_id,),
            ).fetchall()
            return self._decode(conn, thread_id, rows).checkpoints

    def newest_id(self, thread_id: str) -> str | None:
        """Return the id of the thread's newest checkpoint (``None``: it has none), unread."""
        check_thread_id(thread_id)
        query = "SELECT newest FROM corral_threads WHERE name = %s"
        with self._connection(f"read thread {thread_id!r} from") as conn:
            row = conn.execute(query, (thread_id,)).fetchone()
        return None if row is None else str(row[0])

    # -- extras ------------------------------------------------------------------------

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        with self._connection("read threads from") as conn:
            rows = conn.execute("SELECT name FROM corral_threads ORDER BY id").fetchall()
            return [str(name) for (name,) in rows]

    def close(self) -> None:
        """Close the saver's own pool (a pool passed in is left open). Closing twice is fine."""
        self._closed = True
        if self._own_pool:
            _OPEN_POOLS.discard(self.pool)
            self.pool.close()

    def __enter__(self) -> PostgresSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresSaver({self.where!r})"

    # -- internals ---------------------------------------------------------------------

    @contextmanager
    def _connection(self, verb: str) -> Iterator[psycopg.Connection[Any]]:
        """Yield a pooled connection in autocommit mode; turn driver errors into ours."""
        import psycopg
        from psycopg_pool import PoolTimeout

        if getattr(self, "_closed", False):
            msg = f"the PostgresSaver for {self.where!r} is closed; create a new one to go on"
            raise CheckpointError(msg, path=self.where)
        try:
            with self.pool.connection() as conn:
                if not conn.autocommit:
                    conn.autocommit = True
                yield conn
        except PoolTimeout as exc:
            msg = (
                f"cannot {verb} {self.where!r}: no connection within timeout_s="
                f"{self.timeout_s} ({exc}); check that the server runs and accepts connections"
            )
            raise CheckpointError(msg, path=self.where) from exc
        except psycopg.Error as exc:
            raise error_for(verb, self.where, exc) from exc

    def _put(
        self,
        conn: psycopg.Connection[Any],
        checkpoint: Checkpoint,
        writes: list[Any],
        *,
        ensure_ascii: bool,
    ) -> None:
        last = self._last.get(checkpoint.thread_id)
        sink = _BlobRows(conn, self._ids)
        packer = Packer(sink.store, self._blob_ids, {}, ensure_ascii, self.serializer)
        if checkpoint.snapshot is not None:
            self._values.hash_reads(self._last.read_texts(checkpoint.thread_id))
        packed = pack(packer, checkpoint, writes, last)
        params = {
            "thread": checkpoint.thread_id,
            "id": checkpoint.checkpoint_id,
            "parent": checkpoint.parent_id,
            "expected": checkpoint.expected,
            "snapshot": packed.snapshot,
            "writes": packed.writes,
            "meta": packed.meta,
            "delta": packed.meta_is_delta,
            **_blob_params(sink),
        }
        sql = PUT_FIRST if checkpoint.expected is None else PUT_NEXT
        try:
            row = conn.execute(sql, params).fetchone()
        except _unique_violation() as exc:
            raise taken(checkpoint, self.where) from exc
        if row is None or row[0] == 0:
            raise self._refused(conn, checkpoint)
        self._known(packer.new)
        self._last.put(checkpoint.thread_id, packed.last)

    def _refused(self, conn: psycopg.Connection[Any], checkpoint: Checkpoint) -> CheckpointError:
        """Return the error for a put whose compare-and-set changed nothing."""
        thread, new, parent = checkpoint.thread_id, checkpoint.checkpoint_id, checkpoint.parent_id
        row = conn.execute(
            REFUSED,
            {"t": thread, "n": new, "p": parent},
        ).fetchone()
        assert row is not None
        newest, is_taken, parent_known = row
        self._last.forget(checkpoint.thread_id)
        if is_taken:
            return taken(checkpoint, self.where)
        if checkpoint.parent_id is not None and not parent_known:
            return unknown_parent(checkpoint, self.where)
        return stale_parent(checkpoint, newest, self.where)

    def _known(self, blobs: dict[bytes, int]) -> None:
        with self._lock:
            if len(self._blob_ids) + len(blobs) > _KNOWN_CACHE:
                self._blob_ids.clear()
            self._blob_ids.update(blobs)

    def _decode(
        self, conn: psycopg.Connection[Any], thread_id: str, rows: list[tuple[Any, ...]]
    ) -> Read:
        fetched: list[Fetched] = []
        fetch = self._values.fetcher(_texts_of(conn), fetched)
        values = self._values
        return decode_rows(self.where, self.serializer, values, fetch, thread_id, rows, fetched)


@contextmanager
def _fenced(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Run the block as it is, or, in a fenced context (``fenced``), in one transaction
    that passes the fence first."""
    fence = current_fence()
    if fence is None:
        yield
        return
    with conn.transaction():
        fence(conn)
        yield


def _texts_of(conn: psycopg.Connection[Any]) -> Callable[[list[Run]], list[Any]]:
    """Return the reader of stored texts that ``StoredValues`` needs, over ``conn``."""

    def texts(runs: list[Run]) -> list[Any]:
        ids = run_ids(runs)
        found = dict(
            conn.execute(
                "SELECT id, data FROM corral_blobs WHERE id = ANY(%s::bigint[])", (ids,)
            ).fetchall()
        )
        return [found.get(n) for n in ids]

    return texts


def _blob_params(sink: _BlobRows) -> dict[str, list[Any]]:
    return {
        "blob_ids": [blob_id for blob_id, _ in sink.rows],
        "blob_texts": [text for _, text in sink.rows],
    }


def _unique_violation() -> type[Exception]:
    from psycopg import errors

    return errors.UniqueViolation
