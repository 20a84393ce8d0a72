"""The run queue: runs submitted to a thread, taken by workers under a lease.

A queued run is a row of ``corral_runs`` in the checkpointer's own database (PostgreSQL for
workers on many machines, the SQLite file for workers on one). Its life::

    queued --claim--> running --finish--> done | interrupted | failed
                        |  ^
                        |  +-- claim again once lease_until has passed (its worker died)
                        +--release--> queued   (a worker that stops gives it back)

Invariants. A worker holds a run only while ``lease_until`` is in the future and renews it
by heartbeat; a claim takes a run that is queued or whose lease expired, and never a run of
a thread that has an older run still queued or running, so the runs of one thread go one
after another in submission order. Every change a worker makes to a run it holds is
conditional on ``owner`` still being itself, so a worker whose lease was taken over cannot
mark the run finished.

The lease also guards the thread. A claim is numbered (``attempts``), and every write a
worker makes for a run (each checkpoint, each finished task, in the run's thread and in
its subgraphs' threads) is fenced by it (:meth:`RunQueue.fence`): the write's own
transaction first checks that the run is still ``running`` under this owner and this
claim, and refuses the write with ``LeaseLostError`` otherwise. On PostgreSQL the check
locks the run's row (``FOR KEY SHARE``) until the write commits, so a claim, which skips
locked rows, cannot slip in between; on SQLite the write lock orders them. So once
another worker claimed the run, a worker that lost it (frozen, stalled, cut off, or
released at shutdown) commits nothing more: not a step, and not the run's input a second
time. The checkpointer's compare-and-set still refuses a step committed against a stale
parent by any other writer of the thread.

``base`` is the thread's newest checkpoint id when the run was first started ("" for a new
thread). A worker that takes a run over compares it with the thread's newest checkpoint:
equal means nothing of the run was committed, so it starts the run from its input again;
different means it continues the thread from its last checkpoint (``invoke(None)``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

from corral.checkpoint.base import Fence
from corral.checkpoint.serde import Serializer, decode, encode
from corral.control import Command, Resume
from corral.cost import Budget
from corral.errors import BusyThreadError, LeaseLostError

__all__ = [
    "QueuedRun",
    "RunQueue",
    "dump_command",
    "dump_input",
    "lease_lost",
    "load_input",
    "run_of",
]


@dataclass(frozen=True)
class QueuedRun:
    """One run of the queue, as its row stands: claimed by a worker, or a served run's
    record (:mod:`corral.workers.served`)."""

    id: int
    """Its id in the queue."""
    thread_id: str
    input: str | None
    """The JSON of the input (or of the ``Resume`` value); ``None`` continues the thread."""
    resume: bool
    """Whether ``input`` answers an interrupt (``Resume(value)``)."""
    base: str | None
    """The thread's newest checkpoint when the run first started; ``None`` if it never did."""
    attempts: int
    """How many times a worker claimed it (more than one after a takeover)."""
    graph: str = ""
    """The graph a served run is for (``""``: the worker's own)."""
    command: str | None = None
    """The JSON of a ``Command``'s ``update``/``goto``/``resume``: run instead of ``input``."""
    fork: str | None = None
    """The checkpoint a fresh start continues from instead of the newest (time travel)."""
    request: str | None = None
    """The JSON of the run's request: a served run's fields (metadata, multitask strategy,
    stream modes...), and the budget of any run."""
    uuid: str = ""
    """A served run's id in the API (``""``: a run of ``app.submit``)."""
    created_at: float = 0.0
    status: str = "queued"
    """``queued``, ``running``, ``done``, ``interrupted`` or ``failed``."""
    error: str | None = None
    cancel: str | None = None
    """The cancel asked (``"interrupt"``), if any."""
    owner: str = ""
    """The worker that holds it or held it last (``""``: none yet)."""

    @property
    def open(self) -> bool:
        """Whether the run has not ended."""
        return self.status in _OPEN_STATUSES

    @property
    def fields(self) -> dict[str, Any]:
        """The run's request (``{}``: none)."""
        found: dict[str, Any] = json.loads(self.request or "{}")
        return found

    @property
    def budget(self) -> Budget | None:
        """The run's budget (``submit(..., budget=)``, serve's run field ``budget``)."""
        found = self.fields.get("budget")
        return None if found is None else Budget(**found)


class RunQueue:
    """The queue's operations, written once for both databases with ``:name`` parameters.

    A subclass gives the connection, the placeholder style (:meth:`sql`) and the pieces
    of SQL its dialect spells its own way: the clock, the list of graphs a worker takes,
    and the row locks PostgreSQL needs where SQLite's write lock already orders writers.
    """

    where: str
    """The database, for messages (no password)."""
    now: str
    """SQL for the time now, in the type of ``lease_until``."""
    later: str
    """SQL for ``:lease`` seconds from now."""
    graphs: str
    """SQL for the names in ``:graphs`` (a JSON list), after ``IN``."""
    claim_lock: str = ""
    """What a claim's pick adds to take a row another claim is not taking."""
    fence_lock: str = ""
    """What a fence's check adds to hold the run's row until the write commits."""
    epoch: str
    """SQL for ``submitted`` in seconds since 1970."""

    @property
    def columns(self) -> str:
        """The columns :func:`run_of` reads, as SQL."""
        return RUN_COLUMNS.format(epoch=self.epoch)

    @staticmethod
    def sql(sql: str) -> str:
        """Return ``sql`` with its ``:name`` parameters in the driver's style."""
        return sql

    def transaction(self, verb: str, write: bool = True) -> AbstractContextManager[Any]:
        """Return a connection in a transaction (``write=False``: one that only reads)."""
        raise NotImplementedError

    def connection(self, verb: str) -> AbstractContextManager[Any]:
        """Return a connection for one statement, which is its own transaction."""
        return self.transaction(verb)

    def lock_thread(self, db: Any, thread_id: str) -> None:
        """Hold the thread's lock until the transaction ends (two servers, one thread)."""

    def insert(self, db: Any, **values: Any) -> int:
        """Queue a run with ``values`` for the columns of :data:`_INSERTED`; return its id."""
        statement = _INSERT.format(now=self.now)
        row = db.execute(self.sql(statement), dict.fromkeys(_INSERTED) | values).fetchone()
        return int(row[0])

    def submit(
        self, thread_id: str, input: str | None, resume: bool, request: str | None = None
    ) -> int:
        """Queue a run of ``thread_id`` (``request``: its JSON, see :class:`QueuedRun`)."""
        with self.connection("queue a run in") as db:
            return self.insert(db, thread=thread_id, input=input, resume=resume, request=request)

    def claim(self, owner: str, lease_s: float, graphs: Sequence[str]) -> QueuedRun | None:
        """Take the oldest run that is ready (queued, or its lease expired) and is of one of
        ``graphs`` or of none (``app.submit``), or ``None``."""
        statement = _CLAIM.format(
            now=self.now,
            later=self.later,
            graphs=self.graphs,
            lock=self.claim_lock,
            columns=self.columns,
        )
        params = {"owner": owner, "lease": lease_s, "graphs": json.dumps(list(graphs))}
        with self.connection("take a run from") as db:
            row = db.execute(self.sql(statement), params).fetchone()
        return None if row is None else run_of(row)

    def start(self, run_id: int, owner: str, base: str) -> bool:
        """Record ``base`` for a run started for the first time; ``False`` if not held."""
        return self._change("start a run in", "base = :base", run_id, owner, base=base)

    def renew(self, owner: str, run_ids: list[int], lease_s: float) -> set[int]:
        """Extend the leases of the runs ``owner`` still holds; return their ids."""
        later = f"lease_until = {self.later}"
        return {
            i for i in run_ids if self._change("renew leases in", later, i, owner, lease=lease_s)
        }

    def finish(self, run_id: int, owner: str, status: str, error: str | None) -> bool:
        """Mark a held run finished; ``False`` when ``owner`` no longer holds it."""
        ended = f"status = :status, error = :error, finished = {self.now}, lease_until = NULL"
        return self._change("finish a run in", ended, run_id, owner, status=status, error=error)

    def release(self, run_id: int, owner: str) -> bool:
        """Put a held run back in the queue (its worker is stopping)."""
        back = "status = 'queued', owner = NULL, lease_until = NULL"
        return self._change("release a run in", back, run_id, owner)

    def _change(self, verb: str, assign: str, run_id: int, owner: str, **params: Any) -> bool:
        """Set ``assign`` on run ``run_id`` if ``owner`` holds it; return whether it did."""
        statement = (
            f"UPDATE corral_runs SET {assign} "
            "WHERE id = :id AND owner = :owner AND status = 'running'"
        )
        with self.connection(verb) as db:
            cur = db.execute(self.sql(statement), {"id": run_id, "owner": owner, **params})
            return bool(cur.rowcount == 1)

    def _runs(self, db: Any, where: str, **params: Any) -> list[QueuedRun]:
        sql = f"SELECT {self.columns} FROM corral_runs WHERE {where} ORDER BY id DESC"
        return [run_of(row) for row in db.execute(self.sql(sql), params).fetchall()]

    def _read(self, where: str, **params: Any) -> list[QueuedRun]:
        with self.transaction("read runs from", write=False) as db:
            return self._runs(db, where, **params)

    def _write(self, verb: str, sql: str, **params: Any) -> None:
        with self.transaction(verb) as db:
            db.execute(self.sql(sql), params)

    def newest_run(self, thread_id: str) -> QueuedRun | None:
        """Return the newest run submitted to the thread."""
        newest = "id = (SELECT max(id) FROM corral_runs WHERE thread = :thread)"
        found = self._read(newest, thread=thread_id)
        return found[0] if found else None

    # -- served runs (:mod:`corral.workers.served`) ------------------------------------

    def add(self, run: QueuedRun, *, reject: bool = False) -> int:
        """Queue ``run`` (its id, thread, graph, request, input, command and fork); return
        its queue id.

        With ``reject`` (``multitask_strategy="reject"``) it is refused when the thread has a
        run queued or running: the check and the insert are one transaction holding the
        thread's lock, so two servers cannot both accept.

        Raises:
            BusyThreadError: ``reject`` and the thread is busy.
        """
        thread = run.thread_id
        with self.transaction("queue a run in") as db:
            self.lock_thread(db, thread)
            where = f"thread = :thread AND {_OPEN} AND {_SHOWN}"
            if reject and (busy := self._runs(db, where, thread=thread)):
                msg = (
                    f"thread {thread!r} is busy with run {busy[-1].uuid!r} ({busy[-1].status}); "
                    'wait for it, or send multitask_strategy="enqueue" to run after it'
                )
                raise BusyThreadError(msg, thread_id=thread)
            return self.insert(db, thread=thread, **{c: getattr(run, c) for c in _INSERTED[1:]})

    def get(self, uuid: str) -> QueuedRun | None:
        """Return the served run with this id (``None``: none, or its thread was deleted)."""
        found = self._read(f"uuid = :uuid AND {_SHOWN}", uuid=uuid)
        return found[0] if found else None

    def of_thread(self, thread_id: str) -> list[QueuedRun]:
        """Return the thread's served runs, newest first."""
        return self._read(f"thread = :thread AND uuid IS NOT NULL AND {_SHOWN}", thread=thread_id)

    def cancel_asked(self, run_id: int) -> str | None:
        """Return the cancel asked for queued run ``run_id`` (``None``: none)."""
        found = self._read("id = :id", id=run_id)
        return found[0].cancel if found else None

    def cancel(self, uuid: str, action: str = "interrupt") -> None:
        """Ask the run to stop before its next node (whichever worker holds it)."""
        sql = "UPDATE corral_runs SET cancel = :cancel WHERE uuid = :uuid"
        self._write("cancel a run in", sql, cancel=action, uuid=uuid)

    def delete(self, uuid: str) -> None:
        """Forget an ended run."""
        self._write(
            "delete a run from",
            f"DELETE FROM corral_runs WHERE uuid = :uuid AND NOT {_OPEN}",
            uuid=uuid,
        )

    def delete_thread(self, thread_id: str, saver: Any) -> None:
        """Delete the thread: its runs (those that ended or never started go; a running one
        is asked to stop, ``cancel = 'delete'``, and is no longer shown), then its
        checkpoints and record in ``saver``, the checkpointer that holds this queue."""
        with self.transaction("delete runs from") as db:
            self.lock_thread(db, thread_id)
            for sql in (
                "DELETE FROM corral_runs WHERE thread = :thread AND status <> 'running'",
                "UPDATE corral_runs SET cancel = 'delete' WHERE thread = :thread",
            ):
                db.execute(self.sql(sql), {"thread": thread_id})
        saver.delete_thread(thread_id)

    def fence(self, run: QueuedRun, owner: str) -> Fence:
        """Return the check every write of ``run`` by ``owner`` must pass: the run is still
        ``running`` under ``owner`` and claim ``run.attempts`` (else ``LeaseLostError``).

        The check runs in the write's own transaction: on SQLite that holds the write lock,
        so no claim commits until the write does; on PostgreSQL the check locks the row
        (``FOR KEY SHARE``, which does not hold up the heartbeat's renewal of other
        columns), so a claim skips the run meanwhile, and a claim that locked it first
        makes the check wait for it and then see the new owner.
        """
        statement = self.sql(
            "SELECT 1 FROM corral_runs WHERE id = :id AND owner = :owner "
            f"AND attempts = :attempts AND status = 'running' {self.fence_lock}"
        )
        params = {"id": run.id, "owner": owner, "attempts": run.attempts}
        where = self.where

        def held(conn: Any) -> None:
            if conn.execute(statement, params).fetchone() is None:
                raise lease_lost(run, owner, where)

        return held

    def close(self) -> None:
        """Close what the queue opened."""


_SHOWN: Final = "(cancel IS NULL OR cancel <> 'delete')"
"""Not a run whose thread was deleted (its cancel request is ``'delete'``)."""
_OPEN_STATUSES: Final = ("queued", "running")
"""The statuses of a run that has not ended (the others: done, interrupted, failed)."""
_OPEN: Final = f"status IN {_OPEN_STATUSES!r}"

_INSERTED: Final = ("thread", "input", "resume", "uuid", "graph", "request", "command", "fork")
"""The columns a new run is given (``uuid`` and on: those of a served run)."""

_INSERT: Final = f"""
INSERT INTO corral_runs ({", ".join(_INSERTED)}, submitted)
VALUES ({", ".join(f":{c}" for c in _INSERTED)}, {{now}})
RETURNING id
"""

_CLAIM: Final = """
UPDATE corral_runs SET status = 'running', owner = :owner, attempts = attempts + 1,
    lease_until = {later}
WHERE id = (
    SELECT r.id FROM corral_runs AS r
    WHERE (r.status = 'queued' OR (r.status = 'running' AND r.lease_until < {now}))
        AND (r.graph IS NULL OR r.graph IN ({graphs}))
        AND NOT EXISTS (
            SELECT 1 FROM corral_runs AS e
            WHERE e.thread = r.thread AND e.id < r.id AND e.status IN ('queued', 'running'))
    ORDER BY r.id LIMIT 1 {lock})
RETURNING {columns}
"""
"""One statement: the pick (the oldest ready run whose thread has no older run open) and
the take, so two workers never take one run."""


RUN_COLUMNS: Final = (
    "id, thread, input, resume, base, attempts, COALESCE(graph, ''), command, fork, request, "
    "COALESCE(uuid, ''), {epoch}, status, error, cancel, COALESCE(owner, '')"
)
"""The columns of a run's row, in the order of :class:`QueuedRun`'s fields (``{epoch}``:
``submitted`` in seconds since 1970, a float)."""


def run_of(row: Sequence[Any]) -> QueuedRun:
    """Return the run of ``row``: the columns of :data:`RUN_COLUMNS`."""
    run_id, thread, input, resume, *rest = row
    return QueuedRun(run_id, thread, input, bool(resume), *rest)


def lease_lost(run: QueuedRun, owner: str, where: str) -> LeaseLostError:
    """Return the error for a write of ``run`` refused because ``owner`` lost its lease."""
    msg = (
        f"worker {owner!r} no longer holds run {run.id} of thread {run.thread_id!r} "
        f"(its claim {run.attempts}): its lease expired and another worker claimed the run, "
        "or it released the run on stop; this write was refused and whoever holds the run "
        "now goes on with it. If this happens often, raise lease_s (--lease) above the "
        "longest stall of a worker"
    )
    return LeaseLostError(
        msg, run_id=run.id, thread_id=run.thread_id, owner=owner, attempt=run.attempts, path=where
    )


def dump_input(value: Any, serializer: Serializer | None = None) -> tuple[str | None, bool]:
    """Return the stored form of what ``submit`` was given: ``(json, is_resume)``.

    >>> dump_input(Resume("yes")), dump_input({"n": (1, 2)})
    (('"yes"', True), ('{"n":{"$corral":"tuple","v":[1,2]}}', False))
    """
    if value is None:
        return None, False
    resume = isinstance(value, Resume)
    raw = value.value if isinstance(value, Resume) else value
    tree = encode(raw, serializer=serializer, where="input")
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False), resume


def dump_command(command: Command[Any], serializer: Serializer | None = None) -> str:
    """Return the stored form of a ``Command`` a queued run starts with."""
    fields = {"update": command.update, "goto": command.goto, "resume": command.resume}
    tree = encode(fields, serializer=serializer, where="command")
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


def load_input(run: QueuedRun, serializer: Serializer | None = None) -> Any:
    """Return what ``invoke`` gets for a queued run: its input, ``Resume(value)``, a
    ``Command`` or ``None``."""
    if run.command is not None:
        fields = decode(json.loads(run.command), serializer=serializer, where="command")
        return Command(**fields)
    if run.input is None:
        return None
    where = f"the input of queued run {run.id}"
    value = decode(json.loads(run.input), serializer=serializer, where=where)
    return Resume(value) if run.resume else value
