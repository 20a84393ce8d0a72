"""The run queue in PostgreSQL: ``FOR UPDATE SKIP LOCKED`` claims, leases on the server clock.

Times are the server's (``now()``), so workers on machines whose clocks disagree still agree
on when a lease expired. A claim is one statement: the subquery picks and locks the oldest
ready run, skipping rows another worker is claiming at that moment, and the ``UPDATE`` takes
it; each other call is one conditional ``UPDATE`` (see :mod:`corral.workers.queue`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from corral.checkpoint._tables import for_psycopg
from corral.checkpoint.postgres import SCHEMA_LOCK, error_for
from corral.workers.queue import RunQueue
from corral.workers.served import add_served_columns

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresQueue"]

_TABLE = """
CREATE TABLE IF NOT EXISTS corral_runs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread text NOT NULL,
    input text,
    resume boolean NOT NULL DEFAULT false,
    status text NOT NULL DEFAULT 'queued',
    base text,
    owner text,
    lease_until timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    error text,
    submitted timestamptz NOT NULL DEFAULT now(),
    finished timestamptz
);
CREATE INDEX IF NOT EXISTS corral_runs_open ON corral_runs (id)
    WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS corral_runs_thread ON corral_runs (thread, id);
"""
"""The queue's table, created with the first queue of a database (under the lock that
:mod:`corral.checkpoint.postgres` takes to create the store's tables)."""


class PostgresQueue(RunQueue):
    """The queue of a :class:`~corral.checkpoint.PostgresSaver`'s database (same pool)."""

    def __init__(self, pool: ConnectionPool[Any], where: str) -> None:
        self.pool = pool
        self.where = where
        with self.transaction("open the run queue in") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(_TABLE)
            add_served_columns(conn)

    now = "now()"
    later = "now() + make_interval(secs => :lease)"
    graphs = "SELECT json_array_elements_text(CAST(:graphs AS json))"
    claim_lock = "FOR UPDATE SKIP LOCKED"
    fence_lock = "FOR KEY SHARE"
    epoch = "CAST(extract(epoch from submitted) AS float8)"
    sql = staticmethod(for_psycopg)

    @contextmanager
    def transaction(self, verb: str, write: bool = True) -> Iterator[psycopg.Connection[Any]]:
        with self.connection(verb) as conn, conn.transaction():
            yield conn

    def lock_thread(self, db: psycopg.Connection[Any], thread_id: str) -> None:
        db.execute("SELECT pg_advisory_xact_lock(17234, hashtext(%s))", (thread_id,))

    @contextmanager
    def connection(self, verb: str) -> Iterator[psycopg.Connection[Any]]:
        import psycopg

        from corral.errors import CheckpointError

        try:
            with self.pool.connection() as conn:
                if not conn.autocommit:
                    conn.autocommit = True
                yield conn
        except psycopg.Error as exc:
            raise error_for(verb, self.where, exc) from exc
        except Exception as exc:  # psycopg_pool.PoolTimeout: the server is not reachable
            if type(exc).__name__ != "PoolTimeout":
                raise
            msg = f"cannot {verb} {self.where!r}: no connection ({exc}); is the server up?"
            raise CheckpointError(msg, path=self.where) from exc

    def close(self) -> None:
        """Leave the pool to its saver."""
