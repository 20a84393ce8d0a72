"""Saving a run to a checkpointer and reading it back.

One checkpoint is written per superstep (plus one for the input of a run, and one for a
superstep cut short by an interrupt or an error). It stores the superstep's writes, the
``(node, update)`` pairs in merge order, and a full snapshot of the state on the first
checkpoint of every run (its input), on the first checkpoint of a fork, and every
:data:`SNAPSHOT_EVERY` checkpoints. A state is rebuilt by replaying the writes after the
nearest snapshot through the reducers, so storage grows with the number of supersteps, not
with their square, and a rebuild replays fewer than :data:`SNAPSHOT_EVERY` supersteps.

In a superstep with several tasks, each task is also recorded as soon as it finishes
(``put_writes``, when the checkpointer has it), keyed by the superstep's parent checkpoint
and the task's index in the superstep's task order (``Send`` tasks repeat a node's name, so
the index is the identity). A run resumed after a crash takes those tasks as finished
instead of running them again, just as it takes the finished siblings that an interrupted
or failed superstep keeps in its checkpoint's meta (``done``). A superstep with one task
writes only its checkpoint: one commit per superstep.

``meta`` holds everything else a resumed run needs, all of it JSON-friendly (string keys,
lists): the next tasks (with ``Send`` arguments), the step, superstep, per-node run and guard
counts, the ``wait_for`` bookkeeping, pending interrupts and their answers, the finished
tasks of a superstep that was cut short, the run's status and a fingerprint of the graph's
nodes and routes.
"""

from __future__ import annotations

import copy
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from corral.checkpoint.base import Checkpoint, Checkpointer, TaskWrites
from corral.control import Send
from corral.errors import CheckpointError, CorralError
from corral.runtime.engine import NO_ARG, Execution, Result, Saving, Task
from corral.runtime.events import CheckpointWritten, Interrupt, StateSnapshot
from corral.runtime.state import apply_writes
from corral.runtime.tables import Tables

__all__ = ["SNAPSHOT_EVERY", "ThreadSaver", "load", "rebuild", "result_json", "snapshot_of"]

SNAPSHOT_EVERY = 20
"""A checkpoint carries a full snapshot at least every this many checkpoints."""

FORMAT = 1


class ThreadSaver(Saving):
    """Writes the checkpoints of one run of one thread."""

    def __init__(
        self,
        checkpointer: Checkpointer,
        tables: Tables,
        thread_id: str,
        *,
        parent_id: str | None,
        seq: int,
        since_snapshot: int,
        run: int,
        force_snapshot: bool,
    ) -> None:
        self.checkpointer = checkpointer
        self.tables = tables
        self.thread_id = thread_id
        self.parent_id = parent_id
        self.seq = seq
        self.since_snapshot = since_snapshot
        self.run = run
        self.force_snapshot = force_snapshot
        self.last_status = ""
        self.token = secrets.token_hex(4)
        """Ends every checkpoint id of this run: a fork that repeats a seq gets a new id."""
        self.writes = checkpointer if isinstance(checkpointer, TaskWrites) else None
        self.records_tasks = self.writes is not None

    def save_task(self, ex: Execution, result: Result) -> None:
        """Record a finished task of the superstep after the last checkpoint."""
        assert self.writes is not None and self.parent_id is not None
        self.writes.put_writes(self.thread_id, self.parent_id, result[0], result_json(result))

    def interrupt_id(self, ex: Execution, task: int, index: int, node: str) -> str:
        """Return a stable id for an interrupt of this run."""
        text = f"{self.thread_id}|{self.run}|{ex.supersteps}|{task}|{index}|{node}"
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def _ids(self, ex: Execution, pauses: list[dict[str, Any]]) -> None:
        for pause in pauses:
            if "id" not in pause:
                which = pause.get("index")
                index = which if isinstance(which, int) else -1 if pause["when"] == "before" else -2
                pause["id"] = self.interrupt_id(ex, pause["task"], index, pause["node"])

    def save_superstep(
        self,
        ex: Execution,
        writes: list[tuple[str, dict[str, Any]]],
        pauses: list[dict[str, Any]],
    ) -> None:
        """Write the checkpoint of a finished superstep."""
        self._ids(ex, pauses)
        if pauses:
            status = "interrupted"
        else:
            # A join still held when nothing else is left to run never runs: the run is over.
            status = "running" if ex.tasks else "done"
        self.put(ex, writes, status, "loop", pauses)

    def save_partial(
        self,
        ex: Execution,
        results: list[Result],
        pauses: list[dict[str, Any]],
        status: str,
        *,
        reroute: list[Result] | None = None,
        writes: list[tuple[str, dict[str, Any]]] | None = None,
    ) -> None:
        """Write the checkpoint of a superstep cut short (interrupt or error)."""
        self._ids(ex, pauses)
        extra: dict[str, Any] = {}
        if results:
            extra["done"] = [result_json(r) for r in results]
        if reroute is not None:
            extra["reroute"] = [result_json(r) for r in reroute]
        self.put(ex, writes or [], status, "loop", pauses, extra)

    def put(
        self,
        ex: Execution,
        writes: Sequence[tuple[str, Mapping[str, Any]]],
        status: str,
        source: str,
        pauses: list[dict[str, Any]],
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Write one checkpoint of ``ex`` as it is now."""
        seq = self.seq + 1
        checkpoint_id = f"{seq:08d}-{self.token}"
        if (
            self.parent_id is None
            or self.force_snapshot
            or self.since_snapshot + 1 >= SNAPSHOT_EVERY
        ):
            snapshot: dict[str, Any] | None = dict(ex.values)
            since = 0
        else:
            snapshot = None
            since = self.since_snapshot + 1
        meta = _meta(ex, self.tables, status, source, pauses, seq, since, self.run)
        if extra:
            meta.update(extra)
        checkpoint = Checkpoint(
            thread_id=self.thread_id,
            checkpoint_id=checkpoint_id,
            parent_id=self.parent_id,
            snapshot=snapshot,
            writes=[(node, dict(update)) for node, update in writes],
            meta=meta,
        )
        self.checkpointer.put(checkpoint)
        self.parent_id = checkpoint_id
        self.seq = seq
        self.since_snapshot = since
        self.force_snapshot = False
        self.last_status = status
        ex.checkpoint_id = checkpoint_id
        if ex.emit is not None:
            ex.emit(CheckpointWritten(self.thread_id, checkpoint_id, ex.supersteps, status))


def _meta(
    ex: Execution,
    tables: Tables,
    status: str,
    source: str,
    pauses: list[dict[str, Any]],
    seq: int,
    since: int,
    run: int,
) -> dict[str, Any]:
    meta = {
        "format": FORMAT,
        "seq": seq,
        "run": run,
        "status": status,
        "source": source,
        "fingerprint": tables.fingerprint,
        "next": [_task_json(task) for task in ex.tasks],
        "steps": ex.steps,
        "supersteps": ex.supersteps,
        "runs": dict(ex.runs),
        "guards": [[source_, target, count] for (source_, target), count in ex.guards.items()],
        "since_snapshot": since,
    }
    # The bookkeeping below is empty in most checkpoints; an empty one is left out (readers
    # default it), which keeps the stored meta and the work of storing it small.
    if ex.arrived:
        arrived = {join: sorted(nodes) for join, nodes in ex.arrived.items() if nodes}
        if arrived:
            meta["arrived"] = arrived
    if ex.held:
        meta["held"] = list(ex.held)
    if pauses:
        meta["interrupts"] = [dict(p) for p in pauses]
    if ex.answers:
        answers = {str(task): list(values) for task, values in ex.answers.items() if values}
        if answers:
            meta["answers"] = answers
    return meta


def _task_json(task: Task) -> dict[str, Any]:
    node, arg = task
    if arg is NO_ARG:
        return {"node": node.name}
    return {"node": node.name, "arg": arg}


def result_json(result: Result) -> dict[str, Any]:
    index, node, update, goto = result
    return {
        "task": index,
        "node": node.name,
        "update": update,
        "goto": list(goto) if goto is not None else None,
    }


def rebuild(tables: Tables, chain: Sequence[Checkpoint]) -> dict[str, Any]:
    """Return the state at the last checkpoint of ``chain`` (snapshot + replayed writes).

    Raises:
        CheckpointError: the chain does not start at a snapshot, a write no longer applies,
            or the state has keys the schema does not know.
    """
    first = chain[0]
    if first.snapshot is None:
        msg = (
            f"checkpoint {first.checkpoint_id!r} of thread {first.thread_id!r} has no snapshot "
            "to rebuild the state from; the checkpoint store is incomplete"
        )
        raise CheckpointError(msg)
    values = dict(first.snapshot)
    for checkpoint in chain[1:]:
        if checkpoint.writes:
            try:
                values = apply_writes(
                    values,
                    [(node, update) for node, update in checkpoint.writes],
                    tables.reducers,
                    tables.empties,
                )
            except CorralError as exc:
                msg = (
                    f"checkpoint {checkpoint.checkpoint_id!r} of thread "
                    f"{checkpoint.thread_id!r} cannot be replayed with this graph's "
                    f"reducers: {exc}"
                )
                raise CheckpointError(msg) from exc
    unknown = sorted(k for k in values if k not in tables.keyset)
    if unknown:
        msg = (
            f"the state saved in thread {first.thread_id!r} has keys {unknown} that are not "
            f"in this graph's state schema; resume it with the graph that wrote it, or start "
            f"a new thread"
        )
        raise CheckpointError(msg)
    return values


def check_graph(tables: Tables, checkpoint: Checkpoint) -> None:
    """Refuse to continue a checkpoint written by a graph whose nodes or routes changed."""
    meta = checkpoint.meta
    if meta.get("format") != FORMAT or "fingerprint" not in meta:
        msg = (
            f"checkpoint {checkpoint.checkpoint_id!r} of thread {checkpoint.thread_id!r} was "
            f"not written by this version of corral; start a new thread"
        )
        raise CheckpointError(msg)
    if meta["fingerprint"] != tables.fingerprint:
        names = [t.get("node") for t in meta.get("next", [])]
        missing = sorted({n for n in names if n not in tables.nodes})
        detail = f" (its next nodes {missing} no longer exist)" if missing else ""
        msg = (
            f"thread {checkpoint.thread_id!r} was checkpointed by a graph with different "
            f"nodes or routes{detail}; resume it with the graph that wrote it, or start a "
            f"new run with invoke(input, thread_id=...) or a new thread"
        )
        raise CheckpointError(msg)


def _node(tables: Tables, name: Any, checkpoint: Checkpoint) -> Any:
    node = tables.nodes.get(name)
    if node is None:
        msg = (
            f"checkpoint {checkpoint.checkpoint_id!r} of thread {checkpoint.thread_id!r} "
            f"names node {name!r}, which this graph does not have; resume it with the graph "
            f"that wrote it"
        )
        raise CheckpointError(msg)
    return node


def load(
    ex: Execution,
    tables: Tables,
    checkpoint: Checkpoint,
    checkpointer: Checkpointer | None = None,
) -> None:
    """Restore the counters, tasks and bookkeeping of ``ex`` from a checkpoint's meta.

    With ``checkpointer``, the tasks it recorded as finished after ``checkpoint`` (a run that
    stopped in the middle of a superstep) are taken as done and counted, so they do not run
    again.
    """
    check_graph(tables, checkpoint)
    meta = checkpoint.meta
    ex.tasks = [
        (_node(tables, t["node"], checkpoint), t["arg"] if "arg" in t else NO_ARG)
        for t in meta.get("next", [])
    ]
    ex.steps = int(meta.get("steps", 0))
    ex.supersteps = int(meta.get("supersteps", 0))
    ex.runs = {str(k): int(v) for k, v in meta.get("runs", {}).items()}
    for source, target, count in meta.get("guards", []):
        ex.guards[(source, target)] = int(count)
    ex.arrived = {j: set(nodes) for j, nodes in meta.get("arrived", {}).items()}
    ex.held = list(meta.get("held", []))
    ex.answers = {int(k): list(v) for k, v in meta.get("answers", {}).items()}
    ex.done = {}
    for item in meta.get("done", []):
        result = _result(tables, item, checkpoint)
        ex.done[result[0]] = result
    if "reroute" in meta:
        ex.reroute = [_result(tables, item, checkpoint) for item in meta["reroute"]]
    ex.checkpoint_id = checkpoint.checkpoint_id
    if checkpointer is not None and len(ex.tasks) > 1 and isinstance(checkpointer, TaskWrites):
        pending = checkpointer.pending_writes(checkpoint.thread_id, checkpoint.checkpoint_id)
        for index, item in pending.items():
            _take_pending(ex, tables, checkpoint, index, item)


def _take_pending(
    ex: Execution, tables: Tables, checkpoint: Checkpoint, index: int, item: Mapping[str, Any]
) -> None:
    """Count a recorded finished task as done, after checking it is the task it says."""
    if index in ex.done:
        return
    name = item.get("node")
    if (
        not 0 <= index < len(ex.tasks)
        or ex.tasks[index][0].name != name
        or item.get("task") != index
    ):
        msg = (
            f"the finished task {index} recorded after checkpoint {checkpoint.checkpoint_id!r} "
            f"of thread {checkpoint.thread_id!r} names node {name!r}, which is not task "
            f"{index} of that superstep; the checkpoint store is inconsistent: resume from "
            f"an earlier checkpoint or start a new thread"
        )
        raise CheckpointError(msg)
    result = _result(tables, item, checkpoint)
    ex.done[index] = result
    ex.steps += 1
    ex.runs[result[1].name] = ex.runs.get(result[1].name, 0) + 1


def _result(tables: Tables, item: Mapping[str, Any], checkpoint: Checkpoint) -> Result:
    goto = item.get("goto")
    return (
        int(item["task"]),
        _node(tables, item["node"], checkpoint),
        item.get("update"),
        tuple(goto) if goto is not None else None,
    )


def interrupts_of(meta: Mapping[str, Any]) -> tuple[Interrupt, ...]:
    """Return the pending interrupts recorded in a checkpoint's meta."""
    return tuple(
        Interrupt(p["id"], p["node"], p.get("value"), p.get("when", "during"))
        for p in meta.get("interrupts", [])
    )


def snapshot_of(values: dict[str, Any], checkpoint: Checkpoint) -> StateSnapshot:
    """Return the public snapshot of a checkpoint whose state is ``values``."""
    meta = checkpoint.meta
    if "reroute" in meta:
        nxt: tuple[str, ...] = ()
    else:
        nxt = tuple(t["node"] for t in meta.get("next", []))
    return StateSnapshot(
        values=copy.deepcopy(values),
        next=nxt,
        steps=int(meta.get("steps", 0)),
        supersteps=int(meta.get("supersteps", 0)),
        guards={(s, t): int(n) for s, t, n in meta.get("guards", [])},
        checkpoint_id=checkpoint.checkpoint_id,
        parent_id=checkpoint.parent_id,
        status=str(meta.get("status", "running")),
        interrupts=interrupts_of(meta),
        source=str(meta.get("source", "loop")),
        runs={str(k): int(v) for k, v in meta.get("runs", {}).items()},
    )


def is_send(value: Any) -> bool:
    """Return whether a saved goto item is a ``Send``."""
    return isinstance(value, Send)
