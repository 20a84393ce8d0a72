"""``PostgresSaver``: the store of :mod:`corral.checkpoint._store` in PostgreSQL, for many
processes on many machines: the tables and statements of ``SqliteSaver``, in the
connection's schema, through a pool of connections in autocommit mode. A put is one
transaction whose compare-and-set ``UPDATE`` locks the thread's row, so of two runs writing
against one parent the second waits for the first to commit and is then refused.

Opening creates the tables, or checks their layout (``corral_schema``), in one transaction
holding an advisory lock, so processes that open a fresh database at once create it exactly
once; a database of another layout is refused (never rewritten).
"""

from __future__ import annotations

import atexit
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from corral._where import check_conninfo
from corral.checkpoint._store import Store
from corral.checkpoint._tables import ITEMS_POSTGRES, ensure_layout, for_psycopg
from corral.checkpoint.serde import Serializer
from corral.errors import CheckpointError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresSaver"]

SCHEMA_VERSION: Final = 2
"""The layout version this corral writes and reads: the tables of
:mod:`corral.checkpoint._tables`."""

SCHEMA_LOCK: Final = 0x4352524C
"""The advisory lock key taken while creating or migrating tables ("CRRL")."""


def ensure_schema(conn: psycopg.Connection[Any], where: str) -> None:
    """Create corral's tables in a fresh database, or check an existing one (see
    :func:`~corral.checkpoint._tables.ensure_layout`)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        exists = conn.execute("SELECT to_regclass('corral_schema') IS NOT NULL").fetchone()
        older = (
            "an older layout this corral cannot read; finish its threads with the corral "
            "that wrote it, or use another database or schema"
        )
        new = not (exists and exists[0])
        ensure_layout(conn, where, postgres=True, new=new, reads=(SCHEMA_VERSION,), older=older)


def redact(conninfo: str) -> str:
    """Return a connection string without its password, to show in messages.

    >>> redact("postgresql://app:secret@db.example/agents")
    'postgresql://db.example/agents'
    """
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:
        return "<a PostgreSQL database>"
    host = str(parts.get("host") or "localhost")
    port = parts.get("port")
    dbname = parts.get("dbname") or parts.get("user") or ""
    if host.startswith("/"):
        return f"postgresql:///{dbname}?host={host}"
    return f"postgresql://{host}{f':{port}' if port else ''}/{dbname}"


def error_for(verb: str, where: str, exc: Exception) -> CheckpointError:
    """Return the ``CheckpointError`` for a driver error while doing ``verb``."""
    import psycopg

    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.OperationalError):
        if "does not exist" in first:
            how = "create the database (createdb) or fix the name in the URL"
        else:
            how = "check that the server runs, and the host, port and credentials"
        msg = f"cannot {verb} {where!r}: {first}; {how}"
    else:
        msg = f"cannot {verb} {where!r}: {first}"
    return CheckpointError(msg, path=where)


def transient(exc: Exception) -> bool:
    """Whether ``exc`` says the server could not answer now (a lost connection, a server
    going down), not that the rows it sent are damaged."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError)


class PostgresSaver(Store):
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

    items_query = for_psycopg(ITEMS_POSTGRES)
    sql = staticmethod(functools.cache(for_psycopg))
    transient = staticmethod(transient)

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
        super().__init__()
        self.serializer = serializer
        self.timeout_s = timeout_s
        self._closed = False
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
            # closed at exit if still open: a pool garbage-collected while open is closed by
            # whichever thread collected it, which fails when that is one of its own workers
            atexit.register(self.pool.close)
        else:
            self.pool = conninfo
            self.where = redact(str(conninfo.conninfo))
            with self._connection("connect to") as conn:
                ensure_schema(conn, self.where)

    def close(self) -> None:
        """Close the saver's own pool (a pool passed in is left open). Closing twice is fine."""
        self._closed = True
        if self._own_pool:
            atexit.unregister(self.pool.close)
            self.pool.close()

    def __repr__(self) -> str:
        return f"PostgresSaver({self.where!r})"

    @contextmanager
    def _connection(self, verb: str) -> Iterator[psycopg.Connection[Any]]:
        """Yield a pooled connection in autocommit mode; turn driver errors into ours."""
        import psycopg
        from psycopg_pool import PoolTimeout

        if self._closed:
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

    @contextmanager
    def _transaction(self, verb: str, *, read: bool) -> Iterator[psycopg.Cursor[Any]]:
        """Yield one cursor of a pooled connection for the block: a write inside a transaction
        committed at the block's end (rolled back if it raises), a read as it is (every
        statement reads committed rows, and a thread's rows never change once committed)."""
        with self._connection(verb) as conn, conn.cursor() as db:
            if read:
                yield db
                return
            with conn.transaction():
                yield db
