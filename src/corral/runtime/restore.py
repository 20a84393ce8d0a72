"""Reading a run back from its checkpoints: the state rebuilt by replaying writes after the
nearest snapshot, the run's counters and pending tasks loaded from the newest meta, and the
pauses and snapshots it records (the write side is :mod:`corral.runtime.persist`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from corral.checkpoint.base import Checkpoint, Checkpointer, Damaged, damaged
from corral.cost import Cost
from corral.errors import CheckpointError, CorralError
from corral.fingerprint import same_graph
from corral.runtime.events import RunError, StateSnapshot
from corral.runtime.persist import FORMAT, interrupt_id
from corral.runtime.run_state import Pause, Result, RunState
from corral.runtime.state import apply_writes, copy_value
from corral.runtime.tables import Node, Tables, Task

__all__ = [
    "load",
    "pauses_of",
    "rebuild",
    "recorded_tasks",
    "replay",
    "snapshot_of",
]


def pauses_of(checkpoint: Checkpoint) -> list[Pause]:
    """Return the pauses a checkpoint records (``meta["interrupts"]``), each with its id.

    The engine names every pause before it saves it; a record without an ``id`` (a meta
    edited by hand, or written by another tool) gets the id the engine would have given it
    there, so it can be shown and answered like any other.
    """
    meta = checkpoint.meta
    pauses = []
    for item in meta.get("interrupts", []):
        when, index = item.get("when", "during"), item.get("index")
        pause = Pause(int(item.get("task", 0)), str(item["node"]), item.get("value"), when, index)
        run, supersteps = meta.get("run", 1), meta.get("supersteps", 0)
        pause.id = item.get("id") or interrupt_id(checkpoint.thread_id, run, supersteps, pause)
        pauses.append(pause)
    return pauses


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
        values = replay(tables, values, checkpoint)
    unknown = sorted(k for k in values if k not in tables.keyset)
    if unknown:
        msg = (
            f"the state saved in thread {first.thread_id!r} has keys {unknown} that are not "
            f"in this graph's state schema; resume it with the graph that wrote it, or start "
            f"a new thread"
        )
        raise CheckpointError(msg)
    return values


def replay(tables: Tables, values: dict[str, Any], checkpoint: Checkpoint) -> dict[str, Any]:
    """Return ``values`` with the writes ``checkpoint`` stores merged in.

    Raises:
        CheckpointError: a write no longer applies with this graph's reducers.
    """
    if not checkpoint.writes:
        return values
    try:
        return apply_writes(values, checkpoint.writes, tables.reducers, tables.empties)
    except CorralError as exc:
        msg = (
            f"checkpoint {checkpoint.checkpoint_id!r} of thread {checkpoint.thread_id!r} "
            f"cannot be replayed with this graph's reducers: {exc}"
        )
        raise CheckpointError(msg) from exc


def check_graph(tables: Tables, checkpoint: Checkpoint) -> None:
    """Refuse to continue a checkpoint written by a graph whose nodes or routes changed."""
    meta = checkpoint.meta
    if meta.get("format") != FORMAT or "fingerprint" not in meta:
        msg = (
            f"checkpoint {checkpoint.checkpoint_id!r} of thread {checkpoint.thread_id!r} was "
            f"not written by this version of corral; start a new thread"
        )
        raise CheckpointError(msg)
    if not same_graph(meta["fingerprint"], tables.spec, tables.fingerprint):
        missing = sorted({t.get("node") for t in meta.get("next", [])} - tables.nodes.keys())
        detail = f" (its next nodes {missing} no longer exist)" if missing else ""
        msg = (
            f"thread {checkpoint.thread_id!r} was checkpointed by a graph with different "
            f"nodes or routes{detail}; resume it with the graph that wrote it, or start a "
            f"new run with invoke(input, thread_id=...) or a new thread"
        )
        raise CheckpointError(msg)


def load(
    rs: RunState, chain: Sequence[Checkpoint], checkpointer: Checkpointer
) -> list[tuple[int, Node, int]]:
    """Restore the state of ``rs`` (a new run) at the last checkpoint of ``chain``
    (:func:`rebuild`), and its counters, tasks and bookkeeping from that checkpoint's meta.

    The tasks ``checkpointer`` recorded as finished after ``checkpoint`` (a run that
    stopped in the middle of a superstep) are taken as done and counted, so they do not run
    again. The finished subgraph entries (counted, their writes in their children's threads)
    are returned, ``(task, node, count)``, for :func:`corral.runtime.subgraphs.read_back`.
    """
    tables, checkpoint = rs.tables, chain[-1]
    values = rebuild(tables, chain)
    saved = snapshot_of(values, checkpoint, checkpointer, owned=True)  # a damaged meta first
    check_graph(tables, checkpoint)
    meta = checkpoint.meta
    rs.tasks = []  # a node's run on the state is its own task, as the core's routes give it
    with reading_meta(checkpoint, checkpointer):
        for t in meta.get("next", []):
            node = tables.nodes[t["node"]]  # check_graph: the same nodes, unless damaged
            rs.tasks.append(Task(node, t["arg"]) if "arg" in t else node.task)
        rs.arrived = {j: set(nodes) for j, nodes in meta.get("arrived", {}).items()}
        rs.held = list(meta.get("held", []))
        rs.answers = {int(k): list(v) for k, v in meta.get("answers", {}).items()}
        entries = []  # a finished subgraph entry is saved with its count
        for item in meta.get("done", []):  # rs is a new run: its done is empty
            result = _result(tables, item)
            position, node, _, _, _ = result
            if "steps" not in item:
                rs.done[position] = result
            elif node.child is None:
                raise ValueError(f"finished task {item!r} has a count but is not a subgraph")
            else:
                entries.append((position, node, int(item["steps"])))
        if "reroute" in meta:
            rs.reroute = [_result(tables, item) for item in meta["reroute"]]
    rs.values, rs.steps, rs.supersteps = saved.values, saved.steps, saved.supersteps
    rs.runs, rs.purse.spent = saved.runs, saved.spent
    rs.guards.update(saved.guards)
    rs.checkpoint_id = checkpoint.checkpoint_id
    for index, item in recorded_tasks(checkpointer, checkpoint).items():
        _take_pending(rs, tables, checkpoint, index, item)
    return entries


def recorded_tasks(checkpointer: Checkpointer, checkpoint: Checkpoint) -> dict[int, Any]:
    """Return the tasks recorded as finished after ``checkpoint`` (a run stopped in the
    middle of its superstep) that its meta does not list as done: committed node runs that
    a continued run takes as done and counts, by their place in the superstep."""
    meta = checkpoint.meta
    if len(meta.get("next", [])) < 2:
        return {}  # a superstep of one task records nothing before its checkpoint
    pending = checkpointer.pending_writes(checkpoint.thread_id, checkpoint.checkpoint_id)
    done = {item.get("task") for item in meta.get("done", [])}
    return {index: item for index, item in pending.items() if index not in done}


def _take_pending(
    rs: RunState, tables: Tables, checkpoint: Checkpoint, index: int, item: Mapping[str, Any]
) -> None:
    """Count a recorded finished task as done, after checking it is the task it says."""
    name = item.get("node")
    if (
        not 0 <= index < len(rs.tasks)
        or rs.tasks[index].node.name != name
        or item.get("task") != index
    ):
        msg = (
            f"the finished task {index} recorded after checkpoint {checkpoint.checkpoint_id!r} "
            f"of thread {checkpoint.thread_id!r} names node {name!r}, which is not task "
            f"{index} of that superstep; the checkpoint store is inconsistent: resume from "
            f"an earlier checkpoint or start a new thread"
        )
        raise CheckpointError(msg)
    rs.done[index] = _result(tables, item)
    rs.steps += 1
    rs.runs[name] = rs.runs.get(name, 0) + 1


def _result(tables: Tables, item: Mapping[str, Any]) -> Result:
    goto = item.get("goto")
    return (
        int(item["task"]),
        tables.nodes[item["node"]],
        item.get("update"),
        tuple(goto) if goto is not None else None,
        int(item.get("step", 0)),  # 0: saved by a corral that kept no number
    )


@contextmanager
def reading_meta(checkpoint: Checkpoint, saver: Checkpointer) -> Iterator[None]:
    """Raise the damaged-checkpoint ``CheckpointError`` (``saver``'s file, the thread, the
    checkpoint) for any error while the block reads ``checkpoint``'s meta: a meta edited by
    hand or damaged on disk (``"next": 5``) is otherwise a bare ``TypeError`` in the engine."""
    try:
        yield
    except Exception as exc:
        what = Damaged(f"its meta cannot be read: {type(exc).__name__}: {exc}")
        damaged(getattr(saver, "where", None), checkpoint.thread_id, checkpoint.checkpoint_id, what)


def snapshot_of(
    values: dict[str, Any],
    checkpoint: Checkpoint,
    saver: Checkpointer,
    *,
    owned: bool = False,
) -> StateSnapshot:
    """Return the public snapshot of a checkpoint of ``saver`` whose state is ``values``.

    ``owned``: nobody else holds ``values`` (just rebuilt from a store's fresh decoding),
    so they are handed over without a deep copy; else the snapshot gets a deep copy
    (:func:`~corral.runtime.state.copy_value`; ``history`` copies one state per
    checkpoint).
    """
    with reading_meta(checkpoint, saver):
        meta = checkpoint.meta
        # a superstep whose routing failed has no next nodes yet: its routes are still due
        nxt = () if "reroute" in meta else tuple(t["node"] for t in meta.get("next", []))
        status = meta.get("status", "running")
        if status not in ("running", "done", "interrupted", "error"):
            raise ValueError(f"'status' is {status!r}")
        failed = meta.get("error") if status == "error" else None
        return StateSnapshot(
            values=values if owned else copy_value(values),
            next=nxt,
            steps=int(meta.get("steps", 0)),
            supersteps=int(meta.get("supersteps", 0)),
            guards={(s, t): int(n) for s, t, n in meta.get("guards", [])},
            checkpoint_id=checkpoint.checkpoint_id,
            parent_id=checkpoint.parent_id,
            status=status,
            interrupts=tuple(pause.interrupt() for pause in pauses_of(checkpoint)),
            source=str(meta.get("source", "loop")),
            runs={str(k): int(v) for k, v in meta.get("runs", {}).items()},
            error=RunError(str(failed["type"]), str(failed["message"])) if failed else None,
            spent=Cost.from_json(meta.get("spent")),
        )
