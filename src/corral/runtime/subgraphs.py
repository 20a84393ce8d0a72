"""The engine's hooks for subgraph nodes: run an entry, count it, merge it, pause inside it.

A subgraph node is a node whose run is delegated (see :mod:`corral.runtime.child_graph` for
how a child runs and :mod:`corral.runtime.child_steps` for how its node runs count). The
drivers call :func:`run_child_sync` / :func:`run_child_async` at their one call site; the
core accepts the :class:`~corral.runtime.child_graph.ChildOutcome` with
:func:`accept_child` and merges the writes :func:`expand` gives in the task's place. A
finished entry of a superstep cut short stays counted; it is saved with its count, not its
writes, which a resumed run reads back from its child's thread (:func:`read_back`). A
child's pending
pauses, all of them, surface as pauses of the subgraph task (:class:`ChildPause`), named by
path; the answer to each goes back to the child as ``{child interrupt id: value}``
(:func:`answer_for`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from corral.runtime.child_graph import ChildGraph, ChildOutcome, child_thread
from corral.runtime.child_steps import Entry, Relay, StepPool
from corral.runtime.events import StateSnapshot
from corral.runtime.interrupts import _Pause
from corral.runtime.run_state import Call, Pause, RunState, TaskResult
from corral.runtime.tables import NO_ARG, Node, Tables

if TYPE_CHECKING:
    from corral.checkpoint.base import Checkpointer


__all__ = [
    "ChildGraph",
    "ChildOutcome",
    "ChildPause",
    "ChildWrites",
    "accept_child",
    "answer_for",
    "child_thread",
    "expand",
    "merged_by_child",
    "number_entries",
    "paused_children",
    "read_back",
    "run_child_async",
    "run_child_sync",
]


class ChildWrites(dict[str, Any]):
    """A subgraph entry's result at the barrier: no update of its own, the child's writes."""

    __slots__ = ("final", "pairs", "steps")

    def __init__(
        self, pairs: list[tuple[str, dict[str, Any]]], steps: int, final: dict[str, Any] | None
    ) -> None:
        super().__init__()
        self.pairs = pairs
        """The child's writes, ``(path, update)``, to merge in order."""
        self.steps = steps
        """The child's node runs, counted in the parent's steps."""
        self.final = final
        """The child's final values of the keys it wrote, when merging its writes into the
        state it started from gives them (see :attr:`ChildOutcome.final`)."""


class ChildPause(_Pause):
    """The pauses inside a subgraph's child, surfaced as pauses of the subgraph task."""

    def __init__(self, outcome: ChildOutcome, index: int) -> None:
        super().__init__(outcome.interrupts[0].value, index)
        self.interrupts = outcome.interrupts
        self.outcome = outcome

    def count(self, rs: RunState) -> None:
        """Count the child's node runs of this call in the parent's steps and trace: a
        paused run's ``run.steps`` includes every node run so far, the child's too (on
        resume the child counts only its new runs)."""
        rs.steps += self.outcome.steps
        rs.trace.extend(self.outcome.trace)

    def pauses(self, task: int) -> list[Pause]:
        """Return one pause of task ``task`` per pending interrupt of the child, by path."""
        return [Pause(task, i.node, i.value, i.when, self.index, i.id) for i in self.interrupts]


def answer_for(node: Node, pause_id: str, value: Any) -> Any:
    """Return what task ``node`` keeps as the answer to its pause ``pause_id``.

    A subgraph task keeps ``{child interrupt id: value}`` (its pause ids are the child's,
    prefixed with the node's name), so each answer reaches the pause it answers.
    """
    if node.child is None:
        return value
    return {pause_id.removeprefix(f"{node.name}/"): value}


def _thread(rs: RunState, call: Call) -> str | None:
    if rs.checkpoints is None or rs.thread_id is None:
        return None
    writer = rs.checkpoints
    meta = {"run": getattr(writer, "run", 0), "supersteps": rs.supersteps}
    meta["fork"] = getattr(writer, "fork", "")
    return child_thread(rs.thread_id, call.node.name, meta, call.position)


def _plain_tasks(rs: RunState, after: int) -> int:
    """Return the number of tasks of this superstep after ``after`` that are not subgraph
    entries and have not finished: the plan allowed one run to each."""
    tasks = rs.tasks
    if len(tasks) == 1:
        return 0
    done = rs.done
    return sum(
        1
        for index, task in enumerate(tasks)
        if index > after and task.node.child is None and index not in done
    )


def _entry(
    rs: RunState, call: Call, values: dict[str, Any], answers: list[Any] | None, relay: Relay
) -> Entry:
    whole = call.arg is NO_ARG
    state = values if whole else call.arg
    return Entry(state, _thread(rs, call), list(answers or ()), relay, rs.deps, whole)


def number_entries(calls: list[Call], steps: int) -> None:
    """Give the subgraph entries among a superstep's ``calls`` their numbers.

    The plain tasks of a superstep take the first step numbers, in task order (the plan
    gave them those); the node runs inside its subgraph entries take the next ones, in the
    order they start. An entry's own number (its ``NodeStart``, which opens the entry) is
    nominal: ``steps`` (the last plain task's number) plus its place among the entries.
    """
    place = 0
    for index, call in enumerate(calls):
        if call.node.child is not None:
            place += 1
            calls[index] = call._replace(step=steps + place)


def run_child_sync(
    rs: RunState, call: Call, values: dict[str, Any], answers: list[Any] | None
) -> ChildOutcome:
    """Run the child of subgraph task ``call``; raise ``ChildPause`` when it paused."""
    child: ChildGraph = call.node.child
    pool = StepPool(rs.supersteps + 1, rs.max_steps, rs.steps + _plain_tasks(rs, call.position))
    # The superstep's plain tasks have the first numbers: the child's runs come after them.
    relay = Relay(child, pool, pool.taken, rs.emit, shared=False, entry=call.step)
    return _surface(child.run_sync(_entry(rs, call, values, answers, relay)), answers)


async def run_child_async(
    rs: RunState, call: Call, values: dict[str, Any], answers: list[Any] | None
) -> ChildOutcome:
    """Run the child of subgraph task ``call`` on the running loop, like :func:`run_child_sync`.

    The entries of one superstep run concurrently, so they share one step pool.
    """
    child: ChildGraph = call.node.child
    pool = rs.step_pool
    if pool is None or pool.superstep != rs.supersteps + 1:
        pool = StepPool(rs.supersteps + 1, rs.max_steps, rs.steps + _plain_tasks(rs, -1))
        rs.step_pool = pool
    relay = Relay(child, pool, rs.steps, rs.emit, shared=True, entry=call.step)
    return _surface(await child.run_async(_entry(rs, call, values, answers, relay)), answers)


def _surface(outcome: ChildOutcome, answers: list[Any] | None) -> ChildOutcome:
    if outcome.interrupts:
        raise ChildPause(outcome, len(answers or ()))
    return outcome


def accept_child(rs: RunState, call: Call, out: ChildOutcome) -> TaskResult:
    """Count a subgraph entry: its child's node runs are steps; the entry is one run of it."""
    name = call.node.name
    rs.steps += out.steps
    rs.runs[name] = rs.runs.get(name, 0) + 1
    rs.trace.extend(out.trace)
    update = ChildWrites(out.writes, out.steps, out.final)
    return TaskResult(call.position, call.node, update, None)


def expand(results: list[TaskResult]) -> list[tuple[str, dict[str, Any]]]:
    """Return the writes of a superstep's results, a subgraph entry's writes in its place."""
    writes: list[tuple[str, dict[str, Any]]] = []
    for result in results:
        update = result.update
        if type(update) is ChildWrites:
            writes.extend(update.pairs)
        elif update:
            writes.append((result.node.name, update))
    return writes


def merged_by_child(values: dict[str, Any], results: list[TaskResult]) -> dict[str, Any] | None:
    """Return the state after a superstep whose one task was a subgraph entry, when the
    child's final values are that merge (``None``: merge the writes).

    The child merged the same writes, in the same order, through the same reducers, into the
    values it started from, which are this superstep's: merging them again would give the
    same values, at the cost of copying every list it appended to once more.
    """
    if len(results) != 1:
        return None
    update = results[0].update
    if type(update) is not ChildWrites or update.final is None:
        return None
    merged = dict(values)
    merged.update(update.final)
    return merged


def read_back(rs: RunState, done: list[Any]) -> None:
    """Take the subgraph entries among ``done`` (a checkpoint's finished tasks: those saved
    with their count) as finished tasks of ``rs``'s pending superstep, their writes read
    back from their children's threads; they stay counted and do not run again."""
    for item in done:
        if "steps" in item:
            task = int(item["task"])
            node = rs.tables.nodes[item["node"]]
            relay = Relay(node.child, StepPool(0, 0, 0), 0, None, shared=False)
            thread = _thread(rs, Call(task, node, NO_ARG, 0))
            out = node.child.outcome(None, False, Entry({}, thread, [], relay, None, True))
            update = ChildWrites(out.writes, int(item["steps"]), None)
            rs.done[task] = TaskResult(task, node, update, None)


def paused_children(
    tables: Tables, saver: Checkpointer, snapshot: StateSnapshot, thread_id: str
) -> StateSnapshot:
    """Return ``snapshot`` with ``subgraphs``: the snapshot of each child paused in it.

    A child is keyed by its path; when several entries of one subgraph node are paused (a
    ``Send`` fan-out), by its path and its place among them: ``review[0]``, ``review[1]``.
    """
    chain = saver.chain(thread_id, snapshot.checkpoint_id)
    meta = chain[-1].meta if chain else {}
    entries: dict[str, list[int]] = {}
    for pause in meta.get("interrupts", []):
        name = str(pause.get("node", "")).partition("/")[0]
        node = tables.nodes.get(name)
        task = int(pause["task"])
        if node is not None and node.child is not None and task not in entries.get(name, []):
            entries.setdefault(name, []).append(task)
    found: dict[str, StateSnapshot] = {}
    for name, tasks in entries.items():
        child: ChildGraph = tables.nodes[name].child
        for place, task in enumerate(tasks):
            key = name if len(tasks) == 1 else f"{name}[{place}]"
            inner = child.app.get_state(child_thread(thread_id, name, meta, task), subgraphs=True)
            found[key] = inner
            found.update((f"{key}/{path}", deeper) for path, deeper in inner.subgraphs.items())
    return dataclasses.replace(snapshot, subgraphs=found)
