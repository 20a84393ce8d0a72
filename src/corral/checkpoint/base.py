"""The checkpointer protocol: what the runtime saves after each superstep and reads back.

A checkpoint stores the *writes* of its superstep (the ``(node, update)`` pairs in merge
order) and, every few checkpoints, a full *snapshot* of the state; a state is rebuilt from
the newest snapshot at or before it by replaying the writes after it through the reducers,
so storage grows linearly with the number of steps. A thread's checkpoints form a tree
through ``parent_id`` (a fork starts a branch); :meth:`Checkpointer.chain` follows it.

Compare-and-set. A put names the newest checkpoint it was written against
(:attr:`Checkpoint.expected`: its parent, or for a fork's first checkpoint the newest the
writer read); a store refuses it atomically with ``ConcurrentRunError`` when the thread's
newest is another one by then, so two runs continuing from one checkpoint never both commit.

Finished tasks (:meth:`Checkpointer.put_writes`). A task of a superstep with several is
recorded as it finishes, keyed by the superstep's parent checkpoint and the task's position;
a resumed run merges those instead of running them again. The next checkpoint of that
parent drops them in its own transaction.

Fences. Inside ``with fenced(fence):`` every write of the built-in savers first calls
``fence`` with the store's connection inside the write's transaction; it raises to refuse
the write. A worker fences each queued run by its lease (:mod:`corral.workers`).

Holds. A thread is held by the live run that writes it, so another run (or an
``update_state``) is refused before it stores anything. A run's checkpoints carry its token
(:attr:`Checkpoint.run`): a put with status ``"running"`` holds the thread (renewing a lease
of :data:`HOLD_S`), any other status frees it. A holder is live while its lease runs, and
on its own machine while its process lives; this process knows its own runs
(:func:`holding`, which also refuses a run before it starts).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NoReturn, Protocol, runtime_checkable

from corral.errors import CheckpointError, ConcurrentRunError

__all__ = [
    "HOLD_S",
    "Checkpoint",
    "Checkpointer",
    "Fence",
    "Hold",
    "check_checkpointer",
    "check_thread_id",
    "fenced",
    "holding",
]


Fence = Callable[[Any], None]
"""A condition a write must meet: called with the store's connection inside the write's
transaction, before anything is written; it raises to refuse the write (see above)."""

_fence: ContextVar[Fence | None] = ContextVar("corral_fence", default=None)
_queued: ContextVar[str | None] = ContextVar("corral_queued_run", default=None)


@contextmanager
def fenced(fence: Fence, run: str | None = None) -> Iterator[None]:
    """Check ``fence`` in every write a built-in SQL saver makes in this context; ``run``
    names the queued run the fence guards: the run started here holds its thread under that
    name, so a worker that took the run over may take the thread from the one that lost it."""
    token, named = _fence.set(fence), _queued.set(run)
    try:
        yield
    finally:
        _queued.reset(named)
        _fence.reset(token)


def pass_fence(conn: Any) -> None:
    """Call this context's fence, if any, with ``conn``: inside a write's transaction,
    before anything is written (it raises to refuse the write)."""
    fence = _fence.get()
    if fence is not None:
        fence(conn)


@dataclass(frozen=True)
class Checkpoint:
    """One saved superstep of one thread."""

    thread_id: str
    checkpoint_id: str
    """Unique within the thread; chosen by the runtime."""
    parent_id: str | None
    """The checkpoint this one continues from; ``None`` for the first of a thread."""
    snapshot: dict[str, Any] | None
    """The full state after this checkpoint, when this checkpoint carries one."""
    writes: Sequence[tuple[str, dict[str, Any]]] = ()
    """The ``(node, update)`` pairs merged into the parent's state to give this one."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Everything else a resumed run needs (next nodes, counters, interrupts, ...)."""
    newest_read: str | None = None
    """For the first checkpoint of a fork (its parent an older checkpoint): the thread's
    newest checkpoint when the writer read it. ``None`` otherwise: the parent is expected
    to be the newest."""
    run: str | None = None
    """The token of the run that writes it (see "Holds" above); ``None``: no run holds it."""

    @property
    def expected(self) -> str | None:
        """The checkpoint that must be the thread's newest for this put to be accepted."""
        return self.parent_id if self.newest_read is None else self.newest_read

    @property
    def holds(self) -> bool:
        """Whether the thread stays held by :attr:`run` after this put (its run goes on)."""
        return self.run is not None and self.meta.get("status") == "running"


def check_thread_id(thread_id: object) -> None:
    """Raise ``CheckpointError`` for a thread id that is not a ``str`` of valid Unicode (a
    store keeps text as UTF-8, so a lone surrogate cannot be written)."""
    if type(thread_id) is not str:
        kind = type(thread_id).__name__
        article = "an" if kind[:1] in "aeiouAEIOU" else "a"
        msg = (
            f"thread_id={thread_id!r} is {article} {kind}, not a str; "
            f"pass a str such as {str(thread_id)[:40]!r}"
        )
        raise CheckpointError(msg)
    try:
        thread_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = (
            f"thread_id={thread_id!r} holds the lone surrogate {thread_id[exc.start]!r} at "
            f"index {exc.start}, which is not valid Unicode and cannot be stored; pass a "
            "thread id of valid text (bytes decoded with errors='replace', or their hex)"
        )
        raise CheckpointError(msg) from None


def stale_parent(checkpoint: Checkpoint, newest: str | None, where: str | None) -> CheckpointError:
    """Return the ``ConcurrentRunError`` for a put refused because the thread moved on."""
    thread, new, expected = checkpoint.thread_id, checkpoint.checkpoint_id, checkpoint.expected
    msg = (
        f"checkpoint {new!r} of thread {thread!r} was written after {expected!r}, but the "
        f"thread's newest checkpoint is now {newest!r}: another run of the thread committed "
        "first and this run's step was not stored; continue the thread with "
        "invoke(None, thread_id=...) to go on from there"
    )
    return ConcurrentRunError(msg, thread_id=thread, expected=expected, newest=newest, path=where)


HOLD_S: Final = 300.0
"""How long a run holds its thread after its last commit, as seen from another machine."""


def _host() -> str:
    """Return this machine's name and boot (a pid is unique on one machine, in one boot)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{boot}"


_HOST: Final = _host()
_RUNNING: dict[tuple[int, str], str] = {}
"""The runs of this process that are running now: ``(id(store), thread_id) -> token``."""


def holder_id() -> str:
    """Return where a run of this process holds a thread from: ``held_by`` of its puts."""
    return f"{_HOST} {os.getpid()}"


def lapsed(holder: str, held_by: str | None, held_until: float | None) -> bool:
    """Return whether the run ``holder``, holding a thread from ``held_by`` until
    ``held_until``, no longer holds it: its process ended, or (another machine's) its lease."""
    host, _, pid = (held_by or "").rpartition(" ")
    if host != _HOST or not pid.isdigit():
        return held_until is None or held_until < time.time()
    if int(pid) == os.getpid():
        return holder not in _RUNNING.values()
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        pass
    return False


def held(thread_id: str, held_by: str | None, where: str | None) -> CheckpointError:
    """Return the ``ConcurrentRunError`` for a run refused: another live run holds the thread
    (from ``held_by``)."""
    host, _, pid = (held_by or "").rpartition(" ")
    who = f"process {pid} on {host.split('/')[0]!r}" if host else "this process"
    msg = (
        f"thread {thread_id!r} is held by another run that is still going ({who}); this "
        "run was refused before it stored anything: wait until that run ends or pauses, "
        "then try again (a run whose process died frees the thread at once on its machine, "
        f"and {HOLD_S:.0f} s after its last commit as seen from another machine)"
    )
    return ConcurrentRunError(msg, thread_id=thread_id, expected=None, newest=None, path=where)


def taken(checkpoint: Checkpoint, where: str | None) -> CheckpointError:
    """Return the error for a put whose checkpoint id the thread already has."""
    msg = (
        f"checkpoint {checkpoint.checkpoint_id!r} already exists in thread "
        f"{checkpoint.thread_id!r}; give every checkpoint of a thread a new id"
    )
    return CheckpointError(msg, path=where)


def no_checkpoint(thread_id: str, checkpoint_id: str, where: str | None) -> CheckpointError:
    """Return the error for a finished task recorded after a checkpoint the thread lacks."""
    msg = (
        f"cannot record a finished task after checkpoint {checkpoint_id!r}: thread "
        f"{thread_id!r} has no such checkpoint; put the checkpoint first"
    )
    return CheckpointError(msg, path=where)


def unknown_parent(checkpoint: Checkpoint, where: str | None) -> CheckpointError:
    """Return the error for a put whose parent the thread does not have."""
    msg = (
        f"checkpoint {checkpoint.checkpoint_id!r} names parent {checkpoint.parent_id!r}, "
        f"which thread {checkpoint.thread_id!r} does not have; put the parent first "
        "(or pass parent_id=None to start the thread)"
    )
    return CheckpointError(msg, path=where)


class Damaged(Exception):
    """Raised inside a decode when a row cannot be read; the caller names the row."""


def damaged(
    where: str | None, thread_id: str, checkpoint_id: object, exc: BaseException
) -> NoReturn:
    """Raise the ``CheckpointError`` for a checkpoint of ``where`` (``None``: a checkpointer
    that does not say) that cannot be read back."""
    place = f"checkpoint {checkpoint_id!r} of thread {thread_id!r}"
    place += f" in {where!r}" if where is not None else ""
    if isinstance(exc, ValueError | Damaged) and "integer string conversion" in str(exc):
        msg = (
            f"{place} holds an int longer than this Python reads "
            "(sys.get_int_max_str_digits()); raise the limit with "
            "sys.set_int_max_str_digits(0) in this process to read it"
        )
        raise CheckpointError(msg, path=where) from exc
    shown = str(exc) if isinstance(exc, Damaged) else f"{type(exc).__name__}: {exc}"
    msg = (
        f"{place} is damaged ({shown[:200]}); resume from an earlier checkpoint "
        "(app.history) or start a new thread; if this keeps happening, move the file (or "
        "database) away"
    )
    raise CheckpointError(msg, path=where) from exc


@runtime_checkable
class Checkpointer(Protocol):
    """A store of checkpoints, keyed by thread: what the runtime calls, all of it.

    ``MemorySaver``, ``SqliteSaver`` and ``PostgresSaver`` implement it; a store of your own
    implements every method (see "Writing your own checkpointer" in docs/persistence.md).
    Every read returns newly built objects, the caller's to keep and change.
    """

    def put(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` durably (one transaction) if the thread's newest checkpoint is
        ``checkpoint.expected`` and no other live run holds the thread; raise
        ``ConcurrentRunError`` if not, ``CheckpointError`` for an id already used in the
        thread, a parent it lacks, or another failure. It holds or frees the thread (see
        "Holds" above) and drops the finished tasks its parent's superstep recorded."""
        ...

    def chain(self, thread_id: str, checkpoint_id: str | None = None) -> list[Checkpoint]:
        """Return the checkpoints that rebuild ``checkpoint_id`` (the newest when ``None``),
        oldest first: from the nearest ancestor with a snapshot (or the thread's first) to it,
        following ``parent_id``; empty when the thread or checkpoint is unknown."""
        ...

    def checkpoints(self, thread_id: str) -> list[Checkpoint]:
        """Return every checkpoint of the thread, oldest first (in the order they were put)."""
        ...

    def newest_id(self, thread_id: str) -> str | None:
        """Return the id of the thread's newest checkpoint, ``None`` when it has none (a
        fork's first put names it)."""
        ...

    def wants_snapshot(self, thread_id: str, checkpoint_id: str) -> bool:
        """Return whether the checkpoint put after ``checkpoint_id`` should carry a snapshot
        (the runtime also snapshots the first checkpoint of a thread and of a fork)."""
        ...

    def put_writes(
        self, thread_id: str, checkpoint_id: str, task: int, record: dict[str, Any]
    ) -> None:
        """Save durably that ``task`` of the superstep after ``checkpoint_id`` finished with
        ``record`` (replacing an earlier record of it); ``CheckpointError`` when the thread
        has no such checkpoint. A record is a dict of JSON-friendly values:
        ``{"task": 1, "node": "left", "update": {...}, "goto": None}``."""
        ...

    def pending_writes(self, thread_id: str, checkpoint_id: str) -> dict[int, dict[str, Any]]:
        """Return the records put after ``checkpoint_id`` that no checkpoint whose parent is
        ``checkpoint_id`` superseded yet, by task (``{}`` for an unknown one)."""
        ...

    def threads(self) -> list[str]:
        """Return the ids of every thread with a checkpoint, in the order they began."""
        ...

    def check_free(self, thread_id: str, run: str) -> None:
        """Raise ``ConcurrentRunError`` when a live run other than ``run`` holds the thread."""
        ...

    def release(self, thread_id: str, run: str) -> None:
        """Free the thread if ``run`` holds it."""
        ...


def check_checkpointer(checkpointer: object) -> None:
    """Raise ``CheckpointError`` naming the methods of :class:`Checkpointer` that
    ``checkpointer`` lacks (``None``, no checkpointer, is fine)."""
    if checkpointer is None or isinstance(checkpointer, Checkpointer):
        return
    needed = [name for name in vars(Checkpointer) if not name.startswith("_")]
    missing = [name for name in needed if not callable(getattr(checkpointer, name, None))]
    msg = (
        f"checkpointer={checkpointer!r} lacks {', '.join(missing)} of the Checkpointer "
        "protocol; implement every method of corral.checkpoint.Checkpointer (see 'Writing "
        "your own checkpointer' in docs/persistence.md), or pass MemorySaver() or SqliteSaver(path)"
    )
    raise CheckpointError(msg)


_starting: ContextVar[Hold | None] = ContextVar("corral_starting_run", default=None)


class Hold:
    """One run's hold on its thread, from its start to its end."""

    def __init__(self, store: Checkpointer, thread_id: str, token: str) -> None:
        self.store, self.thread_id, self.token = store, thread_id, token
        self.held = False
        """Whether the run's last put left the thread held (its writer says so)."""
        _RUNNING[id(store), thread_id] = token

    def end(self) -> None:
        """The run ended: it is no longer live, and a thread its last put left held (it
        failed on the way) is freed."""
        if _RUNNING.get((id(self.store), self.thread_id)) == self.token:
            del _RUNNING[id(self.store), self.thread_id]
        if self.held:
            self.held = False
            with suppress(CheckpointError):  # lapses all the same: see lapsed()
                self.store.release(self.thread_id, self.token)


@contextmanager
def holding(checkpointer: Checkpointer | None, thread_id: str | None) -> Iterator[Hold | None]:
    """Start a run of ``thread_id`` in this block: refused (``ConcurrentRunError``) while
    another live run holds the thread, else held by this run, in this process at once and in
    the store from its first put (by the writer made in the block: :func:`starting_hold`)."""
    if thread_id is None or checkpointer is None:
        yield None
        return
    token = _queued.get() or secrets.token_hex(8)
    _queued.set(None)  # a run started from inside this one is another run
    running = _RUNNING.get((id(checkpointer), thread_id))
    if running is not None and running != token:
        raise held(thread_id, holder_id(), getattr(checkpointer, "where", None))
    checkpointer.check_free(thread_id, token)
    hold = Hold(checkpointer, thread_id, token)
    reset = _starting.set(hold)
    try:
        yield hold
    except BaseException:
        hold.end()
        raise
    finally:
        _starting.reset(reset)


def starting_hold() -> Hold | None:
    """Return the hold of the run being started in this context (see :func:`holding`)."""
    return _starting.get()
