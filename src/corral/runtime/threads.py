"""Threads: starting a run, continuing or resuming a saved one, forking, reading its history.

:func:`start` turns the arguments of ``invoke``/``stream`` into a :class:`RunState` ready for a
driver: a fresh run from an input, a new run on a finished thread, a thread continued from its
last checkpoint (or an older one: a fork), or a pause answered with ``Resume``. The reading and
writing of a thread's checkpoints (``get_state``, ``history``, ``update_state``) live here too;
:mod:`corral.runtime.persist` holds the checkpoint format.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from corral.checkpoint.base import Checkpoint, Checkpointer
from corral.control import Command, Resume
from corral.cost import Purse
from corral.errors import CheckpointError, GraphError, InvalidUpdateError, ThreadStateError
from corral.runtime import restore
from corral.runtime.drivers import route_async, route_sync
from corral.runtime.events import Event, StateSnapshot
from corral.runtime.persist import ThreadWriter
from corral.runtime.routing import pauses_before
from corral.runtime.run_state import TRACE_LIMIT, RunState
from corral.runtime.state import apply_writes
from corral.runtime.subgraphs import answer_for, read_back
from corral.runtime.superstep import Core
from corral.runtime.tables import Node, Tables
from corral.runtime.telemetry import RunTracer

__all__ = [
    "Settings",
    "continue_thread",
    "get_state",
    "history",
    "new_run",
    "save_input",
    "start",
    "start_fresh",
    "update_state",
]


class Settings(NamedTuple):
    """What a compiled graph fixes for all of its runs."""

    tables: Tables
    checkpointer: Checkpointer | None
    max_steps: int
    pause_before: frozenset[str]
    pause_after: frozenset[str]


def check_cap(max_steps: Any) -> int:
    """Return ``max_steps`` if it is a whole number of node runs, 1 or more; else raise."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        msg = f"max_steps={max_steps!r} must be a whole number of node runs, 1 or more"
        raise GraphError(msg)
    return max_steps


def new_run(
    settings: Settings, max_steps: int | None, thread_id: str | None, deps: Any, purse: Purse | None
) -> RunState:
    """Return an empty run of the graph (no state, no tasks yet); ``purse``: the parent's,
    for a subgraph's child run."""
    cap = check_cap(max_steps) if max_steps is not None else settings.max_steps
    tables = settings.tables
    return RunState(
        tables,
        cap,
        deps,
        thread_id,
        purse or Purse(tables.spec.budget, tables.costs_checked),
        [] if purse is not None else deque(maxlen=TRACE_LIMIT),
        dict.fromkeys(tables.guard_keys, 0),
        pause_before=settings.pause_before,
        pause_after=settings.pause_after,
    )


def start(
    settings: Settings,
    input: Any,
    options: Mapping[str, Any],
    listener: Callable[[Event], None] | None,
    tracer: RunTracer | None,
) -> RunState:
    """Return the run that ``invoke(input, **options)`` asks for (``options``: checked
    ``RunOptions``), ready for a driver: its events to ``listener`` too, traced by
    ``tracer`` (which starts the run's span here)."""
    thread_id, checkpoint_id = options.get("thread_id"), options.get("checkpoint_id")
    resume = input if isinstance(input, Resume) else None
    if isinstance(input, Command) and input.resume is not None:
        resume = Resume(input.resume)
    continuing = input is None or resume is not None
    saver = settings.checkpointer
    continues = continuing or checkpoint_id is not None
    if continues and (saver is None or thread_id is None):
        if not continuing:
            what = f"checkpoint_id={checkpoint_id!r}"
        else:
            what = "Resume(...)" if resume is not None else "invoke(None, ...)"
        msg = (
            f"{what} continues a saved thread: it needs a checkpointer (compile with "
            "g.compile(checkpointer=MemorySaver())) and that thread's thread_id="
        )
        raise ThreadStateError(msg, thread_id=thread_id, checkpoint_id=checkpoint_id)
    chain: list[Checkpoint] = []
    if saver is not None and thread_id is not None:  # one to continue must have a checkpoint
        chain = _chain_of(saver, thread_id, checkpoint_id) if continues else saver.chain(thread_id)
    elif saver is not None:
        thread_id = uuid.uuid4().hex
    rs = new_run(settings, options.get("max_steps"), thread_id, options.get("deps"), None)
    budget = options.get("budget")
    if budget is not None:
        rs.purse.budget = budget
    if tracer is not None:
        rs.checkpoint_meta = tracer.begin(thread_id, chain[-1] if chain else None)
        if not tracer.run.is_recording():  # it makes no node spans: the run stays unwatched
            tracer = None
    for listen in (listener, tracer, options.get("on_event")):
        if listen is not None:
            rs.listen(listen)
    if saver is None or thread_id is None:  # (with a saver there is a thread_id by now)
        start_fresh(rs, {}, input)
        return rs
    newest_read = _newest_if_fork(saver, thread_id, checkpoint_id)
    if continuing:
        continue_thread(rs, saver, chain, newest_read, resume)
    else:
        _start_on_thread(rs, saver, chain, input, newest_read)
    return rs


def start_fresh(rs: RunState, base: Mapping[str, Any], input: Any) -> None:
    """Give ``rs`` the state ``input`` makes of ``base`` (checked first) and its first tasks."""
    tables = rs.tables
    update = check_input(tables, input, "__input__")
    values = dict(base)
    for key, empty in tables.empties.items():
        if key not in values:
            values[key] = copy.copy(empty)
    rs.values = apply_writes(values, [("__input__", update)], tables.reducers, tables.empties)
    rs.tasks = tables.starts


def _start_on_thread(
    rs: RunState, saver: Checkpointer, chain: list[Checkpoint], input: Any, newest_read: str | None
) -> None:
    base = restore.rebuild(rs.tables, chain) if chain else {}
    # A reducer key the thread's state lacks (the schema gained it) starts empty here, which
    # a replay of the input alone would not do.
    filled = any(key not in base for key in rs.tables.empties)
    start_fresh(rs, base, input)
    last = chain[-1] if chain else None
    # The input checkpoint is the input's write on top of the thread's checkpoint: replaying
    # it gives this state (a new run resets only counters and tasks, which every meta holds in
    # full), and the snapshots placed by count and by bytes keep counting across runs. It
    # carries a snapshot on a new thread, on a fork, and when a reducer key started empty.
    writer = ThreadWriter(saver, rs, last, new_run=True, forked=filled, newest_read=newest_read)
    save_input(rs, writer, [("__input__", dict(input))])


def save_input(
    rs: RunState, writer: ThreadWriter, writes: list[tuple[str, dict[str, Any]]]
) -> None:
    """Write the input checkpoint of ``rs``, paused before the nodes it starts with that
    ``interrupt_before`` names."""
    pauses = pauses_before(rs, rs.tasks)
    writer.save(rs, writes, pauses, source="input")
    if pauses:
        rs.pause(pauses)


def continue_thread(
    rs: RunState,
    saver: Checkpointer,
    chain: list[Checkpoint],
    newest_read: str | None,
    resume: Resume | None,
) -> None:
    """Make ``rs`` (a new run) the run that continues the thread of ``chain`` (answered by
    ``resume``); ``newest_read``: the thread's newest checkpoint, when ``chain`` forks."""
    last = chain[-1]
    entries = restore.load(rs, chain, saver)
    ThreadWriter(saver, rs, last, newest_read=newest_read)
    read_back(rs, entries)
    status = last.meta.get("status")
    if status == "done" and not rs.tasks:
        rs.status = "done"
    if resume is None:
        return
    pending = restore.pauses_of(last)
    if not pending or rs.status == "done":
        done = rs.status == "done"
        again = "start a new run with invoke(input" if done else "continue it with invoke(None"
        msg = (
            f"thread {last.thread_id!r} is not waiting for an answer (status {status!r}); "
            f"{again}, thread_id=...)"
        )
        raise ThreadStateError(msg, thread_id=last.thread_id)
    during = [p for p in pending if p.when == "during"]
    ids = [p.id for p in during if p.id is not None]
    answers = _match_answers(last.thread_id, ids, resume.value)
    for pause in during:
        if pause.id in answers:
            value = answer_for(rs.tasks[pause.task].node, pause.id, answers[pause.id])
            rs.answers.setdefault(pause.task, []).append(value)


def _match_answers(thread_id: str, ids: list[str], value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping) and value and all(k in ids for k in value):
        return dict(value)
    if len(ids) <= 1:
        return dict.fromkeys(ids, value)
    msg = (
        f"thread {thread_id!r} has {len(ids)} pending interrupts ({ids}); answer each with "
        "Resume({interrupt_id: value, ...})"
    )
    raise ThreadStateError(msg, thread_id=thread_id)


def _newest_if_fork(saver: Checkpointer, thread_id: str, checkpoint_id: str | None) -> str | None:
    """Return the thread's newest checkpoint when ``checkpoint_id`` is an older one (a fork:
    its first put names that newest for the compare-and-set), else ``None``."""
    if checkpoint_id is None:
        return None
    newest = saver.newest_id(thread_id)
    return newest if newest != checkpoint_id else None


def _chain_of(saver: Checkpointer, thread_id: str, checkpoint_id: str | None) -> list[Checkpoint]:
    """Return the chain of the thread's last checkpoint (or of ``checkpoint_id``).

    Raises:
        CheckpointError: the checkpointer has no such thread (or checkpoint of it).
    """
    chain = saver.chain(thread_id, checkpoint_id)
    if chain:
        return chain
    if checkpoint_id is not None:
        msg = (
            f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; pick one from "
            "app.history(thread_id)"
        )
    else:
        msg = (
            f"thread {thread_id!r} has no checkpoint to continue from; start it with "
            f"invoke(input, thread_id={thread_id!r})"
        )
    raise CheckpointError(msg)


def check_input(tables: Tables, input: Any, writer: str) -> dict[str, Any]:
    """Return ``input`` as an update of state keys, or raise ``InvalidUpdateError``."""
    what = "the input" if writer == "__input__" else "the update"
    if not isinstance(input, Mapping):
        msg = (
            f"{what} is {type(input).__name__} {input!r:.60}; pass a dict of state keys "
            "(or None / Resume(...) to continue a thread)"
        )
        raise InvalidUpdateError(msg, node=writer)
    for key in input:
        if key not in tables.keyset:
            msg = (
                f"{what} has key {key!r}, which is not in the state schema "
                f"(keys: {sorted(tables.keyset)}); remove it or add it to the schema"
            )
            raise InvalidUpdateError(msg, node=writer, key=key if isinstance(key, str) else None)
    return dict(input)


# --------------------------------------------------------------------------- reading


def get_state(
    tables: Tables, saver: Checkpointer, thread_id: str, checkpoint_id: str | None
) -> tuple[StateSnapshot, Checkpoint]:
    """Return the thread's snapshot at its last checkpoint (or at ``checkpoint_id``), and
    that checkpoint."""
    chain = _chain_of(saver, thread_id, checkpoint_id)
    values = restore.rebuild(tables, chain)
    return restore.snapshot_of(values, chain[-1], saver, owned=True), chain[-1]


def history(tables: Tables, saver: Checkpointer, thread_id: str) -> list[StateSnapshot]:
    """Return every checkpoint of the thread as a snapshot, newest first."""
    states: dict[str, dict[str, Any]] = {}
    out: list[StateSnapshot] = []
    for checkpoint in saver.checkpoints(thread_id):
        parent = states.get(checkpoint.parent_id or "")
        if checkpoint.snapshot is not None:
            values = dict(checkpoint.snapshot)
        elif parent is not None:
            values = restore.replay(tables, parent, checkpoint)
        else:
            values = restore.rebuild(tables, saver.chain(thread_id, checkpoint.checkpoint_id))
        states[checkpoint.checkpoint_id] = values
        out.append(restore.snapshot_of(values, checkpoint, saver))
    out.reverse()
    return out


# --------------------------------------------------------------------------- forking


def update_state(
    settings: Settings,
    saver: Checkpointer,
    thread_id: str,
    values: Any,
    as_node: str | None,
    checkpoint_id: str | None,
) -> str:
    """Write ``values`` into the thread as a new checkpoint (a fork); return its id.

    Without ``as_node`` the update is merged and the pending tasks and pauses stay as they
    were (the tasks that had finished run again); with it, ``values`` is what that node
    returned (see :func:`_run_as`).
    """
    tables = settings.tables
    chain = _chain_of(saver, thread_id, checkpoint_id)
    base = chain[-1]
    node = tables.nodes.get(as_node) if as_node is not None else None
    if as_node is not None and node is None:
        msg = f"as_node={as_node!r} is not a node; name one of {list(tables.nodes)}"
        raise GraphError(msg)
    if node is None or not isinstance(values, Command):
        values = check_input(tables, values, as_node or "__update__")
    rs = new_run(settings, None, thread_id, None, None)
    restore.load(rs, chain, saver)
    newest_read = _newest_if_fork(saver, thread_id, checkpoint_id)
    writer = ThreadWriter(saver, rs, base, forked=True, newest_read=newest_read)
    writer.source = "update"
    if node is not None:
        _run_as(rs, node, values)
    else:
        writes = [("__update__", values)]
        rs.values = apply_writes(rs.values, writes, tables.reducers, tables.empties)
        # the finished nodes run again on the new state; a subgraph entry's child keeps its
        # own thread (one that finished is read back when the run continues); a finished
        # node that had an answer asks again: the answer was to a question about the old state
        rs.answers = {task: got for task, got in rs.answers.items() if task not in rs.done}
        entries = [item for item in base.meta.get("done", []) if "steps" in item]
        extra: dict[str, Any] = {"done": entries} if entries else {}
        extra.update((k, base.meta[k]) for k in ("reroute", "error") if k in base.meta)
        status = str(base.meta.get("status", "running"))
        writer.save(rs, writes, restore.pauses_of(base), status, source="update", extra=extra)
    assert rs.checkpoint_id is not None
    return rs.checkpoint_id


def _run_as(rs: RunState, node: Node, out: Any) -> None:
    """Close the pending superstep as if ``node`` had run in it and returned ``out``.

    Its task there (or, when it has none, a task of its own added to it) finishes with
    ``out``; the tasks that had finished before are merged with it at the barrier; the core
    takes every route, and the tasks that have not run wait for the next superstep.
    """
    rerouted = rs.reroute or []  # merged before a router failed: their routes are still due
    if rerouted:
        rs.tasks, rs.reroute = [], None
    tasks, done = list(rs.tasks), rs.done
    # x's task that has not run, else the one that finished (the update replaces what it
    # returned: a person correcting it), else a task of its own added to the superstep
    mine = [i for i, t in enumerate(tasks) if t.node is node]
    at = next((i for i in mine if i not in done), mine[0] if mine else None)
    if at is None:
        at, rs.tasks = len(tasks), [*tasks, node.task]
    done.pop(at, None)
    waiting = [t for i, t in enumerate(tasks) if i != at and i not in done]
    core = Core(rs)
    if not core.finished((at, node.task, rs.steps + 1), out, 0.0):
        assert core.failure is not None
        raise core.failure
    core.close()  # nothing pauses: the one task was given its outcome
    core.results = [*rerouted, *core.results]
    core.next.extend(waiting)  # the tasks that have not run wait for the next superstep
    if any(n.router is not None and n.router.is_async for _, n, _, _, _ in core.results):
        asyncio.run(route_async(rs, core))
    else:
        route_sync(rs, core)
