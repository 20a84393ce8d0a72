"""Saving a run to a checkpointer (reading it back is :mod:`corral.runtime.restore`).

One checkpoint is written per superstep (plus one for the input of a run, and one for a
superstep cut short by an interrupt or an error). It stores the superstep's writes, the
``(node, update)`` pairs in merge order, and a full snapshot of the state on the first
checkpoint of a thread, on the first checkpoint of a fork, and then where the store
advises one (:meth:`~corral.checkpoint.base.Checkpointer.wants_snapshot`: it knows the
bytes), across the runs of a thread (a new run's input checkpoint is the input's write). A
state is rebuilt by replaying the writes after the nearest snapshot through the reducers,
so storage grows with the number of supersteps, not with their square.

In a superstep with several tasks, each task is also recorded as soon as it finishes
(``put_writes``), keyed by the superstep's parent checkpoint and the task's index in the
superstep's task order (``Send`` tasks repeat a node's name, so the index is the identity).
A run resumed after a crash takes those tasks as finished instead of running them again,
just as it takes the finished siblings that an interrupted or failed superstep keeps in its
checkpoint's meta (``done``). A superstep with one task
writes only its checkpoint: one commit per superstep.

``meta`` holds everything else a resumed run needs, all of it JSON-friendly (string keys,
lists): the next tasks (with ``Send`` arguments), the step, superstep, per-node run and guard
counts, the ``wait_for`` bookkeeping, pending interrupts and their answers, the finished
tasks of a superstep that was cut short, the run's status, a fingerprint of the graph's
nodes and routes, and when it was written (``time``, whole seconds since the epoch, for
``corral threads``: within one second it does not change, so a saver that stores the meta as
a difference from the parent's stores no time at all).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from corral.checkpoint.base import Checkpoint, Checkpointer, starting_hold
from corral.reducers import reducer_name
from corral.runtime.events import CheckpointWritten
from corral.runtime.run_state import Pause, Result, RunState
from corral.runtime.subgraphs import ChildWrites
from corral.runtime.tables import NO_ARG

__all__ = ["ThreadWriter"]

FORMAT = 1


class ThreadWriter:
    """Writes the checkpoints of one run of one thread."""

    def __init__(
        self,
        checkpointer: Checkpointer,
        rs: RunState,
        last: Checkpoint | None,
        *,
        new_run: bool = False,
        forked: bool = False,
        newest_read: str | None = None,
    ) -> None:
        """Become the writer of run ``rs`` (``rs.checkpoints``), which writes the checkpoints
        of ``rs.thread_id`` on from ``last`` (``None``: the thread has none).

        ``new_run``: they belong to a new run of the thread; ``newest_read``: a fork's first
        put names it for the compare-and-set (the thread's newest checkpoint when the run
        read it); the first carries a snapshot on a fork, or when ``forked`` asks for one
        like a fork's (``update_state``, a state a reducer key was added to).
        """
        assert rs.thread_id is not None
        meta = last.meta if last is not None else {}
        self.checkpointer = checkpointer
        self.tables = rs.tables
        self.thread_id = rs.thread_id
        self.parent_id = last.checkpoint_id if last is not None else None
        self.seq = int(meta.get("seq", 0))
        self.run = int(meta.get("run", 0)) + 1 if new_run else int(meta.get("run", 1))
        self.force_snapshot = forked or newest_read is not None
        self.newest_read = newest_read
        # A fork starts a branch of its own: what runs after it, a subgraph's child
        # included, runs afresh instead of finding the old branch's runs.
        self.fork = secrets.token_hex(4) if newest_read is not None else str(meta.get("fork", ""))
        """Names the fork this run's checkpoints are on (``""``: the thread's first branch);
        a subgraph entry's child thread is named after it (``child_graph.child_thread``)."""
        self.last_status = "" if new_run else str(meta.get("status", ""))
        self.source = "loop"
        """What writes a finished superstep's checkpoint: a run, or ``"update"``."""
        self.token = secrets.token_hex(4)
        """Ends every checkpoint id of this run: a fork that repeats a seq gets a new id."""
        self.hold = starting_hold()
        """The run's hold on its thread, when a run (not a subgraph, not update_state)."""
        rs.checkpoints = self

    def save_task(self, rs: RunState, result: Result) -> None:
        """Record a finished task of the superstep after the last checkpoint."""
        assert self.parent_id is not None
        position, *_ = result
        self.checkpointer.put_writes(self.thread_id, self.parent_id, position, _result_json(result))

    def save(
        self,
        rs: RunState,
        writes: Sequence[tuple[str, Mapping[str, Any]]],
        pauses: list[Pause],
        status: str = "",
        *,
        done: Sequence[Result] = (),
        reroute: list[Result] | None = None,
        error: Exception | None = None,
        source: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Write one checkpoint of ``rs`` as it is now, each pause of it with its stable id.

        For a superstep cut short, ``done``: its tasks that finished, ``reroute``: its merged
        tasks whose routes are still due; a finished superstep's ``status`` is what the pauses,
        ``error`` (the one the run ends with, recorded in the meta) and the next tasks say,
        and its ``source`` the writer's. ``extra`` entries go in the meta as they are.
        """
        # a superstep cut short (its status given) is the loop's record, whoever ran it
        source = source or ("loop" if status else self.source)
        if not status and pauses:
            status = "interrupted"
        elif not status:
            status = "error" if error is not None else "running" if rs.tasks else "done"
        for pause in pauses:
            if pause.id is None:
                pause.id = interrupt_id(self.thread_id, self.run, rs.supersteps, pause)
        seq = self.seq + 1
        checkpoint_id = f"{seq:08d}-{self.token}"
        snapshot = None
        if (  # the store knows the bytes: it says where, after a thread's or a fork's first
            self.parent_id is None
            or self.force_snapshot
            or self.checkpointer.wants_snapshot(self.thread_id, self.parent_id)
        ):
            snapshot = dict(rs.values)
        meta = self._meta(rs, status, source, pauses, seq)
        if snapshot is not None or source == "input":
            # ``corral show`` replays later writes with these, without loading the graph.
            reducers = self.tables.reducers.items()
            meta["reducers"] = {key: reducer_name(fn) for key, fn in reducers if fn is not None}
        if error is not None:
            meta["error"] = {"type": type(error).__name__, "message": str(error)}
        if done:
            meta["done"] = [_result_json(r) for r in done]
        if reroute is not None:
            meta["reroute"] = [_result_json(r) for r in reroute]
        meta.update(extra or ())
        checkpoint = Checkpoint(
            thread_id=self.thread_id,
            checkpoint_id=checkpoint_id,
            parent_id=self.parent_id,
            snapshot=snapshot,
            writes=[(node, dict(update)) for node, update in writes],
            meta=meta,
            newest_read=self.newest_read,
            run=self.hold.token if self.hold is not None else None,
        )
        self.checkpointer.put(checkpoint)
        if self.hold is not None:
            self.hold.held = checkpoint.holds
        self.newest_read = None
        self.parent_id = checkpoint_id
        self.seq = seq
        self.force_snapshot = False
        self.last_status = status
        rs.checkpoint_id = checkpoint_id
        if rs.emit is not None:
            rs.emit(CheckpointWritten(self.thread_id, checkpoint_id, rs.supersteps, status))

    def _meta(
        self, rs: RunState, status: str, source: str, pauses: list[Pause], seq: int
    ) -> dict[str, Any]:
        meta = {
            "format": FORMAT,
            "seq": seq,
            "run": self.run,
            "status": status,
            "source": source,
            "fingerprint": self.tables.fingerprint,
            "next": [
                {"node": t.node.name} if t.arg is NO_ARG else {"node": t.node.name, "arg": t.arg}
                for t in rs.tasks
            ],
            "steps": rs.steps,
            "supersteps": rs.supersteps,
            "runs": dict(rs.runs),
            "guards": [[source_, target, count] for (source_, target), count in rs.guards.items()],
            "time": int(time.time()),
        }
        # This bookkeeping is empty in most checkpoints; an empty one is left out (readers
        # default it), which keeps the stored meta and the work of storing it small.
        optional = {
            "arrived": {join: sorted(nodes) for join, nodes in rs.arrived.items() if nodes},
            "held": list(rs.held),
            "spent": rs.purse.spent.to_json() if rs.purse.spent else None,
            "interrupts": [_pause_json(p) for p in pauses],
            "answers": {str(task): list(values) for task, values in rs.answers.items() if values},
            "fork": self.fork,
        }
        meta.update((key, value) for key, value in optional.items() if value)
        if rs.checkpoint_meta:
            meta.update(rs.checkpoint_meta)
        return meta


def _result_json(result: Result) -> dict[str, Any]:
    """Return the JSON form of a finished task (saved in ``meta`` or with ``put_writes``)."""
    position, node, update, goto, step = result
    out: dict[str, Any] = {"task": position, "node": node.name, "step": step}
    if type(update) is ChildWrites:  # a subgraph entry: its child's node runs, counted;
        out["steps"] = update.steps  # its writes are the checkpoint's, its own update empty
        update = dict(update)
    out["update"] = update
    out["goto"] = list(goto) if goto is not None else None
    return out


def _pause_json(pause: Pause) -> dict[str, Any]:
    """Return the JSON form of a pause (named by :meth:`ThreadWriter.save`), as
    ``meta["interrupts"]`` holds it."""
    out = {"task": pause.task, "node": pause.node, "value": pause.value, "when": pause.when}
    out["id"] = pause.id
    if pause.index is not None:
        out["index"] = pause.index
    return out


def interrupt_id(thread_id: str, run: int, supersteps: int, pause: Pause) -> str:
    """Return the stable id of ``pause``, made in superstep ``supersteps`` of run ``run``."""
    which = pause.index
    index = which if which is not None else -1 if pause.when == "before" else -2
    text = f"{thread_id}|{run}|{supersteps}|{pause.task}|{index}|{pause.node}"
    return hashlib.sha1(text.encode()).hexdigest()[:12]
