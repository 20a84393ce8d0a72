"""The run queue in PostgreSQL: ``FOR UPDATE SKIP LOCKED`` claims, leases on the server clock.

Times are the server's (``now()``), so workers on machines whose clocks disagree still agree
on when a lease expired. A claim is one statement: the subquery picks and locks the oldest
ready run, skipping rows another worker is claiming at that moment, and the ``UPDATE`` takes
it; each other call is one conditional ``UPDATE`` (see :mod:`corral.workers.queue`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from corral.checkpoint._pg_schema import SCHEMA_LOCK, error_for
from corral.checkpoint._tables import for_psycopg
from corral.workers.queue import Outcome, QueuedRun, lease_lost
from corral.workers.served import add_served_columns

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from corral.checkpoint.base import Fence

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
:mod:`corral.checkpoint._pg_schema` takes to create the store's tables)."""

_READY = """
    (r.status = 'queued' OR (r.status = 'running' AND r.lease_until < now()))
    AND (r.graph IS NULL OR r.graph = ANY(%(graphs)s))
    AND NOT EXISTS (
        SELECT 1 FROM corral_runs AS e
        WHERE e.thread = r.thread AND e.id < r.id AND e.status IN ('queued', 'running'))
"""

_CLAIM = f"""
UPDATE corral_runs SET status = 'running', owner = %(owner)s, attempts = attempts + 1,
    lease_until = now() + make_interval(secs => %(lease)s)
WHERE id = (
    SELECT r.id FROM corral_runs AS r WHERE {_READY}
    ORDER BY r.id FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING id, thread, input, resume, base, attempts, graph, command, fork, request
"""

_INSERT_SERVED = """
INSERT INTO corral_runs (thread, input, resume, uuid, graph, request, command, fork)
VALUES (:thread, :input, :resume, :uuid, :graph, :request, :command, :fork)
RETURNING id
"""

_HELD = """
SELECT 1 FROM corral_runs
WHERE id = %s AND owner = %s AND attempts = %s AND status = 'running'
FOR KEY SHARE
"""
"""The fence of a worker's write, in the write's transaction. The row lock (held until the
write commits) makes a claim skip the run meanwhile (``SKIP LOCKED``); a claim that locked
it first makes the check wait for the claim and then see the new owner. ``KEY SHARE``
does not hold up the heartbeat's renewal (an ``UPDATE`` of other columns)."""


class PostgresQueue:
    """The queue of a :class:`~corral.checkpoint.PostgresSaver`'s database (same pool)."""

    def __init__(self, pool: ConnectionPool[Any], where: str) -> None:
        self.pool = pool
        self.where = where
        with self.transaction("open the run queue in") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            conn.execute(_TABLE)
            present = conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = 'corral_runs'"
            ).fetchall()
            add_served_columns(conn, {str(name) for (name,) in present})

    # what corral.workers.served needs: the same statements in both databases
    epoch = "extract(epoch from submitted)"
    insert_served = _INSERT_SERVED
    sql = staticmethod(for_psycopg)

    @contextmanager
    def transaction(self, verb: str, write: bool = True) -> Iterator[psycopg.Connection[Any]]:
        with self._conn(verb) as conn, conn.transaction():
            yield conn

    def lock_thread(self, conn: psycopg.Connection[Any], thread_id: str) -> None:
        """Hold the thread's lock until the transaction ends (two servers, one thread)."""
        conn.execute("SELECT pg_advisory_xact_lock(17234, hashtext(%s))", (thread_id,))

    @contextmanager
    def _conn(self, verb: str) -> Iterator[psycopg.Connection[Any]]:
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

    def submit(
        self, thread_id: str, input: str | None, resume: bool, request: str | None = None
    ) -> int:
        with self._conn("queue a run in") as conn:
            row = conn.execute(
                "INSERT INTO corral_runs (thread, input, resume, request) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (thread_id, input, resume, request),
            ).fetchone()
            assert row is not None
            return int(row[0])

    def claim(self, owner: str, lease_s: float, graphs: Sequence[str]) -> QueuedRun | None:
        with self._conn("take a run from") as conn:
            params = {"owner": owner, "lease": lease_s, "graphs": list(graphs)}
            row = conn.execute(_CLAIM, params).fetchone()
        if row is None:
            return None
        run_id, thread, input, resume, base, attempts, *rest = row
        return QueuedRun(int(run_id), str(thread), input, bool(resume), base, int(attempts), *rest)

    def start(self, run_id: int, owner: str, base: str) -> bool:
        with self._conn("start a run in") as conn:
            cur = conn.execute(
                "UPDATE corral_runs SET base = %s WHERE id = %s AND owner = %s "
                "AND status = 'running'",
                (base, run_id, owner),
            )
            return cur.rowcount == 1

    def renew(self, owner: str, run_ids: list[int], lease_s: float) -> set[int]:
        if not run_ids:
            return set()
        with self._conn("renew leases in") as conn:
            rows = conn.execute(
                "UPDATE corral_runs SET lease_until = now() + make_interval(secs => %s) "
                "WHERE id = ANY(%s) AND owner = %s AND status = 'running' RETURNING id",
                (lease_s, run_ids, owner),
            ).fetchall()
            return {int(r[0]) for r in rows}

    def finish(self, run_id: int, owner: str, status: str, error: str | None) -> bool:
        with self._conn("finish a run in") as conn:
            cur = conn.execute(
                "UPDATE corral_runs SET status = %s, error = %s, finished = now(), "
                "lease_until = NULL WHERE id = %s AND owner = %s AND status = 'running'",
                (status, error, run_id, owner),
            )
            return cur.rowcount == 1

    def release(self, run_id: int, owner: str) -> bool:
        with self._conn("release a run in") as conn:
            cur = conn.execute(
                "UPDATE corral_runs SET status = 'queued', owner = NULL, lease_until = NULL "
                "WHERE id = %s AND owner = %s AND status = 'running'",
                (run_id, owner),
            )
            return cur.rowcount == 1

    def outcome(self, thread_id: str) -> Outcome | None:
        with self._conn("read runs from") as conn:
            row = conn.execute(
                "SELECT id, status, error FROM corral_runs WHERE thread = %s "
                "ORDER BY id DESC LIMIT 1",
                (thread_id,),
            ).fetchone()
        return None if row is None else Outcome(int(row[0]), str(row[1]), row[2])

    def fence(self, run: QueuedRun, owner: str) -> Fence:
        where = self.where

        def held(conn: psycopg.Connection[Any]) -> None:
            row = conn.execute(_HELD, (run.id, owner, run.attempts)).fetchone()
            if row is None:
                raise lease_lost(run, owner, where)

        return held

    def close(self) -> None:
        """Leave the pool to its saver."""
