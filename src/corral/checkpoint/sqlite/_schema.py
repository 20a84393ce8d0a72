"""Opening a corral SQLite file (creating it, or checking it is ours), and transactions.

The file carries an ``application_id`` and a ``corral_schema`` version row: a file corral
did not write, or a damaged one, raises ``CheckpointError`` naming the path, never a silent
reset. The tables are in :mod:`corral.checkpoint._tables`; a file of layout 6 (corral 0.1)
is upgraded once (:mod:`corral.checkpoint.sqlite._layout6`), older pre-release layouts are
refused by name.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Final, TypeVar

from corral.checkpoint._tables import ensure_layout, written_by
from corral.checkpoint.sqlite._layout6 import upgrade as upgrade_layout6
from corral.errors import CheckpointError

SCHEMA_VERSION: Final = 7
"""The layout this corral writes: the tables of :mod:`corral.checkpoint._tables`."""
_UPGRADED: Final = 6
"""The one older layout this corral upgrades (the one corral 0.1 wrote)."""
_OLDER: Final = (
    "a pre-release layout this corral cannot read; finish its threads with the corral that "
    f"wrote it, or open it once with corral 0.1 (which upgrades it to layout {_UPGRADED}, "
    "which this corral upgrades), or start a new file"
)
_APPLICATION_ID: Final = 0x4352524C
"""``PRAGMA application_id`` of a corral file ("CRRL")."""
WAIT_SLICE_S: Final = 0.025
"""How long SQLite itself waits for another connection's lock before handing back to
Python (the connection's busy timeout). Its busy handler sleeps in C, where Python runs no
signal handler: a Ctrl-C during a 30 s wait would be honoured only when the wait ends. So
corral waits in slices of this length, up to the saver's ``timeout_s``
(:func:`patiently`), and a Ctrl-C gets through within one slice."""
_MMAP_BYTES: Final = 256 << 20
"""How much of a file SQLite reads through a memory map (from the OS cache, uncopied)."""
_PAUSE_S: Final = 0.001
"""The pause between slices (SQLite may refuse without waiting, e.g. during recovery)."""
T = TypeVar("T")


def open_file(path: str, synchronous: str, timeout_s: float) -> sqlite3.Connection:
    """Return a connection to the corral file at ``path``, created or checked (SQLite errors
    pass through; :func:`error_for` turns them into ``CheckpointError``)."""
    in_memory = path == ":memory:" or path.startswith("file::memory:")
    if not in_memory:
        folder = Path(path).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create the folder {str(folder)!r} for checkpoints: {exc}"
            raise CheckpointError(msg, path=path) from exc
        # Given a file it may not write, SQLite opens it read-only without a word (a run
        # would fail at its first checkpoint), and in a read-only folder it cannot create
        # the -wal and -shm files a WAL file is read through; so such a file is refused here.
        if not os.access(folder, os.W_OK) or (Path(path).exists() and not os.access(path, os.W_OK)):
            raise CheckpointError(_read_only_message(path, "open"), path=path)

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(
            path,
            timeout=min(timeout_s, WAIT_SLICE_S),  # the rest of the wait is in Python
            isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE ... COMMIT
            check_same_thread=False,  # ainvoke may call from worker threads; see _lock
        )
        try:
            _prepare(conn, path, synchronous, in_memory)
        except BaseException:
            conn.close()
            raise
        if not in_memory:
            conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
        return conn

    # Switching a new file to WAL (or reading it while another process does) can be
    # refused at once with SQLITE_BUSY, without the busy timeout; so opening is retried.
    return patiently(connect, timeout_s)


def _prepare(conn: sqlite3.Connection, path: str, synchronous: str, in_memory: bool) -> None:
    """Check the file is corral's (or empty), put it in WAL mode, then create its tables or
    check their version (and upgrade a file of layout 6) in one transaction."""
    _check_header(conn, path)
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode != "wal" and not in_memory:
        msg = (
            f"cannot put {path!r} in WAL mode (SQLite answered {mode!r}); "
            "keep checkpoints on a local disk, not a network share"
        )
        raise CheckpointError(msg, path=path)
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    with transaction(conn):  # two processes opening a new file: one creates
        _check_header(conn, path)  # another process may have written it meanwhile
        new = conn.execute("PRAGMA application_id").fetchone()[0] == 0
        if new:
            conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
        reads = (SCHEMA_VERSION, _UPGRADED)
        found = ensure_layout(conn, path, postgres=False, new=new, reads=reads, older=_OLDER)
        if found == _UPGRADED:
            upgrade_layout6(conn, path)
            stored = (SCHEMA_VERSION, written_by())
            conn.execute("UPDATE corral_schema SET version = ?, written_by = ?", stored)


def _check_header(conn: sqlite3.Connection, path: str) -> None:
    """Refuse a file that is not SQLite, or is SQLite written by something else."""
    # One read transaction: another process may be creating the schema right now, and
    # both facts must come from one moment.
    try:
        with nullcontext() if conn.in_transaction else transaction(conn, read=True):
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            query = "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"
            tables = [name for (name,) in conn.execute(query)]
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        if isinstance(exc, sqlite3.OperationalError) and busy(exc):
            raise
        msg = (
            f"{path!r} is not a corral checkpoint database (SQLite says: {exc}); "
            "pass a new path, or move the file away if it is damaged"
        )
        raise CheckpointError(msg, path=path) from exc
    if app_id == _APPLICATION_ID or (app_id == 0 and not tables):
        return
    shown = ", ".join(repr(t) for t in tables[:5]) + (", ..." if len(tables) > 5 else "")
    msg = (
        f"{path!r} is a SQLite database that corral did not create "
        f"(application_id={app_id}, tables: {shown or 'none'}); "
        "give SqliteSaver a path of its own"
    )
    raise CheckpointError(msg, path=path)


@contextmanager
def transaction(
    conn: sqlite3.Connection, *, read: bool = False, timeout_s: float = 0.0
) -> Iterator[None]:
    """Run the block in one transaction: committed at its end, rolled back on any exception.

    A write transaction takes the write lock at once (``BEGIN IMMEDIATE``); a read
    transaction takes its snapshot at once. Either waits for another connection up to
    ``timeout_s`` (at least one slice of SQLite's own wait) where a Ctrl-C gets through
    (:func:`patiently`); the block's statements then never wait (WAL mode), and a
    statement refused with ``SQLITE_BUSY`` did nothing, so trying it again is safe.
    ``BEGIN`` is inside the ``try``, so a ``KeyboardInterrupt`` that arrives as it returns
    still ends the transaction; the rollback runs only while a transaction is open (a
    failed ``COMMIT`` may already have ended it) and never hides the original error.
    """
    try:
        if read:
            conn.execute("BEGIN")  # deferred: takes no lock yet, cannot wait
            patiently(lambda: conn.execute("PRAGMA schema_version"), timeout_s)  # a snapshot
        else:
            patiently(lambda: conn.execute("BEGIN IMMEDIATE"), timeout_s)
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def patiently(attempt: Callable[[], T], timeout_s: float) -> T:
    """Return ``attempt()``, tried again while another connection holds the lock, for up to
    ``timeout_s`` in all; then raise SQLite's "database is locked".

    SQLite waits one :data:`WAIT_SLICE_S` per try; between tries Python runs its signal
    handlers, so a Ctrl-C gets through within one slice.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(_PAUSE_S)


def error_for(
    path: str, timeout_s: float, verb: str, exc: sqlite3.DatabaseError | UnicodeDecodeError
) -> CheckpointError:
    """Return the ``CheckpointError`` for an error of SQLite (or a stored text that is not
    UTF-8) while doing ``verb``: what is actually wrong (another process, a full disk,
    permissions, damage) and a way out."""
    name = str(getattr(exc, "sqlite_errorname", ""))
    if isinstance(exc, sqlite3.OperationalError) and busy(exc):
        msg = (
            f"cannot {verb} {path!r}: another process held it for more than "
            f"timeout_s={timeout_s}; raise timeout_s or run fewer writers at once"
        )
    elif name.startswith(("SQLITE_FULL", "SQLITE_IOERR")):
        msg = (
            f"cannot {verb} {path!r}: the disk is full or refused a write or read ({name}: "
            f"{exc}), or the file grew larger than this process may write (ulimit -f); every "
            "checkpoint committed before is kept: free space, then continue with "
            "invoke(None, thread_id=...)"
        )
    elif name == "SQLITE_TOOBIG":
        msg = (
            f"cannot {verb} {path!r}: a value is larger than this SQLite takes ({exc}); every "
            "checkpoint committed before is kept: keep large data outside the state (a file "
            "or a URL the state names), then continue with invoke(None, thread_id=...)"
        )
    elif name.startswith("SQLITE_READONLY"):
        msg = _read_only_message(path, verb)
    elif name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        msg = (
            f"cannot {verb} {path!r}: it cannot be opened ({name}: {exc}); check that the "
            "path exists and that this process may read it and write in its folder"
        )
    elif isinstance(exc, sqlite3.OperationalError) and not name.startswith(
        ("SQLITE_CORRUPT", "SQLITE_NOTADB")
    ):
        msg = f"cannot {verb} {path!r}: {exc}"
    else:  # a damaged page, a text that is not UTF-8, a file that is not SQLite
        msg = (
            f"cannot {verb} {path!r}: {exc}; the file is damaged or not a corral "
            "database: move it away (resume is impossible from it) or pass a new path"
        )
    return CheckpointError(msg, path=path)


def transient(exc: Exception) -> bool:
    """Whether ``exc`` is SQLite's own failure to answer now (a disk or lock error, an
    interrupted statement, no memory), not a text it could not decode or a damaged page."""
    return isinstance(exc, sqlite3.OperationalError) and hasattr(exc, "sqlite_errorname")


def _read_only_message(path: str, verb: str) -> str:
    """Return the message for a file that this process may not write, or in such a folder."""
    return (
        f"cannot {verb} {path!r}: the file or its folder is read-only for this process; give "
        "this process write permission on the file and its folder (SQLite writes -wal and "
        "-shm files beside it), or copy the file (and its -wal file, if any) to a writable "
        "folder and open the copy"
    )


def busy(exc: sqlite3.OperationalError) -> bool:
    """Return whether SQLite refused because another connection holds a lock."""
    code = getattr(exc, "sqlite_errorcode", 0)  # none: an error of Python's module, not SQLite's
    return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
