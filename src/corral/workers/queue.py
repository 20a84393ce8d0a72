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
from dataclasses import dataclass
from typing import Any, Final, Protocol

from corral.checkpoint.base import Fence
from corral.checkpoint.serde import Serializer, decode, encode
from corral.control import Command, Resume
from corral.cost import Budget
from corral.errors import LeaseLostError

__all__ = [
    "FINISHED",
    "Outcome",
    "QueuedRun",
    "RunQueue",
    "dump_command",
    "dump_input",
    "lease_lost",
    "load_input",
]

FINISHED: Final = frozenset({"done", "interrupted", "failed"})
"""The statuses of a run that left the queue."""


@dataclass(frozen=True)
class QueuedRun:
    """One run a worker has claimed."""

    id: int
    thread_id: str
    input: str | None
    """The JSON of the input (or of the ``Resume`` value); ``None`` continues the thread."""
    resume: bool
    """Whether ``input`` answers an interrupt (``Resume(value)``)."""
    base: str | None
    """The thread's newest checkpoint when the run first started; ``None`` if it never did."""
    attempts: int
    """How many times a worker claimed it (more than one after a takeover)."""
    graph: str | None = None
    """The graph a served run is for (``None``: the worker's own)."""
    command: str | None = None
    """The JSON of a ``Command``'s ``update``/``goto``/``resume``: run instead of ``input``."""
    fork: str | None = None
    """The checkpoint a fresh start continues from instead of the newest (time travel)."""
    request: str | None = None
    """The JSON of the run's request: a served run's fields, and the budget of any run."""

    @property
    def budget(self) -> Budget | None:
        """The run's budget (``submit(..., budget=)``, serve's run field ``budget``)."""
        found = json.loads(self.request or "{}").get("budget")
        return None if found is None else Budget(**found)


@dataclass(frozen=True)
class Outcome:
    """Where the newest run of a thread stands."""

    run_id: int
    status: str
    error: str | None


class RunQueue(Protocol):
    """The operations workers and ``app.submit`` / ``app.wait`` need from a queue store."""

    where: str
    """The database, for messages (no password)."""

    def submit(
        self, thread_id: str, input: str | None, resume: bool, request: str | None = None
    ) -> int:
        """Queue a run of ``thread_id`` (``request``: its JSON, see :class:`QueuedRun`)."""
        ...

    def claim(self, owner: str, lease_s: float, graphs: Sequence[str]) -> QueuedRun | None:
        """Take the oldest run that is ready (queued, or its lease expired) and is of one of
        ``graphs`` or of none (``app.submit``), or ``None``."""
        ...

    def start(self, run_id: int, owner: str, base: str) -> bool:
        """Record ``base`` for a run started for the first time; ``False`` if not held."""
        ...

    def renew(self, owner: str, run_ids: list[int], lease_s: float) -> set[int]:
        """Extend the leases of the runs ``owner`` still holds; return their ids."""
        ...

    def finish(self, run_id: int, owner: str, status: str, error: str | None) -> bool:
        """Mark a held run finished; ``False`` when ``owner`` no longer holds it."""
        ...

    def release(self, run_id: int, owner: str) -> bool:
        """Put a held run back in the queue (its worker is stopping)."""
        ...

    def outcome(self, thread_id: str) -> Outcome | None:
        """Return the status of the newest run submitted to the thread."""
        ...

    def fence(self, run: QueuedRun, owner: str) -> Fence:
        """Return the check every write of ``run`` by ``owner`` must pass: the run is still
        ``running`` under ``owner`` and claim ``run.attempts`` (else ``LeaseLostError``)."""
        ...

    def close(self) -> None:
        """Close what the queue opened."""
        ...


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
