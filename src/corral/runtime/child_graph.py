"""Running a subgraph node: the child graph as a run of its own, inside its parent's step.

A subgraph node is not a node run. When a driver reaches one, the node's :class:`ChildGraph`
(compiled with the parent app) starts (or resumes) the child run of that call
(:meth:`ChildGraph.enter`), drives it with the same driver as the parent's and hands the
core the entry's :class:`~corral.runtime.subgraphs.ChildWrites` (:meth:`ChildGraph.outcome`):
the **writes** to hand back to the parent, in the order the child merged them, and how many
node runs the child took. The core merges those writes through the parent's reducers, in
order, like the updates of that many nodes, so a list the child appended to gets each
appended item once (the child started from the parent's list; handing back its final list
would duplicate it). Of several writes of one
entry to a key without a reducer only the last is handed back: they replace each other in
order, as they would have in the parent, and must not look like parallel writes at the
parent's barrier.

- In: the parent's values of the keys both schemas share, or ``input(state)``; a ``Send``
  argument replaces the parent's state as ``input``'s argument (or is the child's input).
- Out: each child write restricted to the shared keys, named by path (``research/search``),
  or with ``output=`` one write, ``output(final_child_state)``.
- Counting: see :mod:`corral.runtime.child_steps`. Guards and ``max_runs`` count per entry,
  because each entry is a fresh child run.
- Errors: a run error raised in the child names its nodes by path; it stops the whole run,
  and carries the top-level run's state (:meth:`~corral.runtime.superstep.Core.failed`).
- Checkpoints: with a checkpointer, the child runs on a thread of its own in the same store,
  named after the parent's thread, the node's path and the entry (the parent's run and
  superstep and the task's place in it), so running the same task again after a crash or a
  pause finds the child where it stopped: a child that finished is not run again (its writes
  are read back from its checkpoints), an interrupted one is resumed with the answers to its
  own interrupts, a crashed one continues from its last checkpoint. A fresh entry writes no
  input checkpoint (its input is the parent's task, run again after a crash): its first
  superstep's checkpoint carries the snapshot.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from corral.checkpoint.base import Checkpoint, Checkpointer
from corral.control import Resume
from corral.errors import CorralError, InvalidUpdateError
from corral.runtime import drivers, restore, threads
from corral.runtime.events import (
    Custom,
    Event,
    Interrupt,
    NodeEnd,
    NodeRetry,
    NodeStart,
    RouteTaken,
    StateSnapshot,
)
from corral.runtime.persist import ThreadWriter
from corral.runtime.routing import pauses_before
from corral.runtime.run_state import Call, RunState
from corral.runtime.subgraphs import ChildPause, ChildWrites
from corral.runtime.tables import NO_ARG, Tables
from corral.spec import SubgraphSpec

__all__ = [
    "ChildGraph",
    "child_thread",
    "thread_state",
]


def child_thread(thread_id: str, path: str, meta: Mapping[str, Any], task: int) -> str:
    """Return the thread the child of ``path`` runs on for task ``task`` of the superstep
    after the parent's checkpoint ``meta``: ``T/path@RUN.SUPERSTEP.TASK``, and ``~FORK``
    after it on a fork's branch, so that a fork runs the child afresh."""
    entry = f"{meta.get('run', 0)}.{int(meta.get('supersteps', 0)) + 1}.{task}"
    fork = meta.get("fork")
    return f"{thread_id}/{path}@{entry}~{fork}" if fork else f"{thread_id}/{path}@{entry}"


class ChildGraph:
    """The child of one subgraph node, compiled with the parent app: what every entry of
    the pair (parent, child) shares is decided here once."""

    def __init__(
        self, name: str, sub: SubgraphSpec, settings: threads.Settings, parent: Tables
    ) -> None:
        """``settings``: the child graph's runs' (its checkpointer is the parent's)."""
        self.name = name
        self.sub = sub
        self.settings = settings
        self.tables = tables = settings.tables
        self.shared = frozenset(sub.shared)
        self.whole = tables.keyset <= self.shared
        """Whether every child key is shared: a child write reaches the parent whole."""
        self.reduced = frozenset(k for k in sub.shared if k in tables.empties)
        """The shared keys a child reducer merges into: the child starts from a copy of the
        parent's value, which the reducer may change in place."""
        self.own_empties = {k: v for k, v in tables.empties.items() if k not in self.shared}
        self.last_write = parent.last_write
        """The parent's keys without a reducer."""

    def run_sync(self, rs: RunState, call: Call, answers: list[Any] | None) -> ChildWrites:
        """Run the child of subgraph task ``call`` of the parent run ``rs`` (whose superstep
        reads ``rs.values``) to its end or next pause with the sync driver; raise
        ``ChildPause`` when it paused."""
        child, counted = self.enter(rs, call, answers)
        if child is not None:
            for _ in drivers.run_sync(child):
                pass
        return self.outcome(rs, call, answers, child, counted)

    async def run_async(self, rs: RunState, call: Call, answers: Any) -> ChildWrites:
        """Run the child like :meth:`run_sync` with the async driver, on the running loop,
        concurrently with the other tasks of the superstep."""
        child, counted = self.enter(rs, call, answers)
        if child is not None:
            async for _ in drivers.run_async(child):
                pass
        return self.outcome(rs, call, answers, child, counted)

    def _thread(self, rs: RunState, task: int) -> str | None:
        """Return the child thread of entry ``task`` of ``rs``'s superstep (``None``: the
        parent keeps no checkpoints)."""
        writer = rs.checkpoints
        if not isinstance(writer, ThreadWriter) or rs.thread_id is None:
            return None
        meta = {"run": writer.run, "supersteps": rs.supersteps, "fork": writer.fork}
        return child_thread(rs.thread_id, self.name, meta, task)

    def saver(self) -> Checkpointer:
        """Return the checkpointer the child's threads are in (one has a thread only with one)."""
        assert self.settings.checkpointer is not None
        return self.settings.checkpointer

    def thread_writes(self, thread: str) -> list[tuple[str, dict[str, Any]]]:
        """Return the child's node writes kept in ``thread`` (its input and updates left out)."""
        return [
            (node, update)
            for checkpoint in self.saver().checkpoints(thread)
            for node, update in checkpoint.writes
            if not (node.startswith("__") and node.endswith("__"))
        ]

    def finished_writes(self, rs: RunState, task: int) -> list[tuple[str, dict[str, Any]]]:
        """Return the parent's writes of entry ``task`` of ``rs``'s superstep, whose child
        finished before the superstep was cut short, read back from the child's thread."""
        thread = self._thread(rs, task)
        assert thread is not None
        chain = self.saver().chain(thread)
        return self.writes(self.thread_writes(thread), restore.rebuild(self.tables, chain))

    def enter(
        self, parent: RunState, call: Call, answers: list[Any] | None
    ) -> tuple[RunState | None, int]:
        """Start or resume the child run of one call of subgraph task ``call`` of ``parent``;
        return it (``None``: the child finished before this call) and how many of its node
        runs the parent counted already (when it paused).

        ``answers``: those given to the task's pauses, ``{child interrupt id: value}`` dicts.
        """
        position, task, _ = call
        thread = self._thread(parent, position)
        if thread is not None:
            chain = self.saver().chain(thread)
            if chain:
                status = str(chain[-1].meta.get("status", "running"))
                if status == "done":
                    return None, 0
                return self._resumed(parent, call, answers, chain, status)
        rs = self._new_run(parent, call, thread)
        self.fresh(rs, parent.values if task.arg is NO_ARG else task.arg)
        if thread is not None:
            writer = ThreadWriter(self.saver(), rs, None, new_run=True, forked=True)
            # Finished tasks are recorded against a checkpoint; a pause is saved in one.
            if len(rs.tasks) > 1 or (rs.pause_before and pauses_before(rs, rs.tasks)):
                threads.save_input(rs, writer, [])
        return rs, 0

    def _resumed(
        self,
        parent: RunState,
        call: Call,
        answers: list[Any] | None,
        chain: list[Checkpoint],
        status: str,
    ) -> tuple[RunState, int]:
        """Return the run that continues the child's thread (resumed with its answers).

        Of its node runs so far, those before its last pause are in the parent's steps
        already (counted when it paused); the others (runs before a crash) count now.
        """
        start: Resume | None = None
        if status == "interrupted":
            given: dict[str, Any] = {}
            for answer in answers or ():
                given.update(answer)
            pending = (str(pause.id) for pause in restore.pauses_of(chain[-1]))
            chosen = {i: given[i] for i in pending if i in given}
            start = Resume(chosen) if chosen else None  # none: it pauses again at once
        rs = self._new_run(parent, call, chain[-1].thread_id)
        threads.continue_thread(rs, self.saver(), chain, None, start)
        counted = rs.steps if status == "interrupted" else _counted(chain)
        assert rs.step_pool is not None
        rs.step_pool.taken += rs.steps - counted
        return rs, counted

    def _new_run(self, parent: RunState, call: Call, thread: str | None) -> RunState:
        """Return a new child run for ``call``: it numbers its node runs from the top-level
        run's step pool (:mod:`corral.runtime.child_steps`) and hands its node events and
        routes on to the parent."""
        rs = threads.new_run(self.settings, None, thread, parent.deps, parent.purse)
        assert parent.step_pool is not None  # the plan gave the superstep's entries one
        _, _, step = call
        rs.step_pool, rs.entry = parent.step_pool, (*parent.entry, step)
        if parent.emit is not None:
            rs.emit = partial(_hand_on, parent.emit)
        return rs

    def fresh(self, rs: RunState, state: Mapping[str, Any]) -> None:
        """Give the new child run ``rs`` its first state, of ``state`` (the parent's, or a
        ``Send`` argument), and tasks; its writes are kept in ``rs.log``."""
        rs.log = []
        if self.sub.input is not None:
            mapped, path = self.sub.input(state), self.tables.prefix[:-1]
            if not isinstance(mapped, Mapping):
                msg = (
                    f"input= of subgraph {path!r} returned {type(mapped).__name__}; "
                    "return a dict of the child's keys"
                )
                raise CorralError(msg)
            try:
                threads.start_fresh(rs, {}, mapped)
            except InvalidUpdateError as exc:  # the child's input is what input= returned
                msg = f"input= of subgraph {path!r} returned what the child cannot take: {exc}"
                raise InvalidUpdateError(msg, node=path, key=exc.key) from exc
            return
        shared, reduced = self.shared, self.reduced
        values = {}
        for key, value in state.items():
            if key in shared:
                values[key] = copy.copy(value) if key in reduced else value
        for key, empty in self.own_empties.items():
            values[key] = copy.copy(empty)
        rs.values, rs.tasks = values, self.tables.starts

    def outcome(
        self,
        parent: RunState,
        call: Call,
        answers: list[Any] | None,
        rs: RunState | None,
        counted: int,
    ) -> ChildWrites:
        """Return the parent's view of the child run ``rs`` of this call (:meth:`enter`), or
        raise ``ChildPause``.

        When the child had finished before this call, or was resumed in it, its writes are
        read back from its thread.
        """
        if rs is not None and rs.status == "interrupted" and rs.interrupts:
            name = self.name
            pauses = tuple(
                Interrupt(f"{name}/{i.id}", f"{name}/{i.node}", i.value, i.when)
                for i in rs.interrupts
            )
            raise ChildPause(pauses, len(answers or ()), rs.steps - counted, rs.trace)
        if rs is not None and rs.log is not None:  # a fresh child keeps its writes
            return ChildWrites(self.writes(rs.log, rs.values), rs.steps, rs.trace)
        position, _, _ = call
        thread = self._thread(parent, position)
        assert thread is not None  # resumed in this call, or finished before it
        raw = self.thread_writes(thread)
        if rs is not None:
            return ChildWrites(self.writes(raw, rs.values), rs.steps - counted, rs.trace)
        saver = self.saver()
        chain = saver.chain(thread)
        steps = _committed_steps(self.tables, saver, chain[-1]) - _counted(chain)
        return ChildWrites(self.writes(raw, restore.rebuild(self.tables, chain)), steps, [])

    def writes(
        self, raw: Sequence[tuple[str, dict[str, Any]]], final: Mapping[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """Return the parent's writes of one entry: ``raw`` child writes, or ``output``'s."""
        if self.sub.output is not None:
            update = self.sub.output(final)
            return [] if update is None else [(self.name, dict(update))]
        name, shared = self.name, self.shared
        out: list[tuple[str, dict[str, Any]]] = []
        for node, update in raw:
            if not self.whole:
                update = {k: v for k, v in update.items() if k in shared}
            if update:
                out.append((f"{name}/{node}", update))  # named by its path in the parent
        return _last_only(out, self.last_write) if len(out) > 1 and self.last_write else out


def _hand_on(emit: Callable[[Event], None], event: Event) -> None:
    """Hand a child's node event or route to its parent's ``emit``: they already name the
    path, the run-wide step and the entry; the child's checkpoints, supersteps and end are
    its own."""
    if type(event) in _HANDED_ON:
        emit(event)


_HANDED_ON = frozenset({NodeStart, NodeEnd, NodeRetry, Custom, RouteTaken})


def thread_state(
    tables: Tables, saver: Checkpointer, thread_id: str, checkpoint_id: str | None, subgraphs: bool
) -> StateSnapshot:
    """Return ``get_state``'s snapshot: at the newest checkpoint its ``steps`` count what
    the cut-short superstep committed (:func:`_committed_steps`); with ``subgraphs``, the
    children paused in it (:func:`_paused_children`)."""
    snapshot, last = threads.get_state(tables, saver, thread_id, checkpoint_id)
    if checkpoint_id is None:
        snapshot = dataclasses.replace(snapshot, steps=_committed_steps(tables, saver, last))
    return _paused_children(tables, saver, snapshot, last) if subgraphs else snapshot


def _committed_steps(tables: Tables, saver: Checkpointer, checkpoint: Checkpoint) -> int:
    """Return the node runs of the run that a thread's newest ``checkpoint`` belongs to:
    its own count and what its superstep committed that continuing it takes as done (API.md
    section 5: each node run counts once, also across a crash): the tasks recorded as
    finished after it, and the runs its subgraph entries' children committed that it has
    not counted (a crash, a kill or a pause stopped the superstep before its barrier)."""
    meta = checkpoint.meta
    with restore.reading_meta(checkpoint, saver):
        done = {item.get("task") for item in meta.get("done", [])}
    steps = int(meta.get("steps", 0)) + len(restore.recorded_tasks(saver, checkpoint))
    for task, item in enumerate(meta.get("next", [])):
        node = tables.nodes.get(item.get("node"))
        if node is None or node.child is None or task in done:
            continue
        child: ChildGraph = node.child
        chain = saver.chain(child_thread(checkpoint.thread_id, node.name, meta, task))
        if chain:
            steps += _committed_steps(child.tables, saver, chain[-1]) - _counted(chain)
    return steps


def _counted(chain: list[Checkpoint]) -> int:
    """Return the child's runs the parent counted already: those before its last pause
    (the parent adds a child's runs to its steps when the child pauses)."""
    for checkpoint in reversed(chain):
        if checkpoint.meta.get("status") == "interrupted":
            return int(checkpoint.meta.get("steps", 0))
    return 0


def _last_only(
    writes: list[tuple[str, dict[str, Any]]], last_write: frozenset[str]
) -> list[tuple[str, dict[str, Any]]]:
    """Return ``writes`` with each key without a reducer in its last write only."""
    seen: set[str] = set()
    out: list[tuple[str, dict[str, Any]]] = []
    for path, update in reversed(writes):
        replaced = last_write.intersection(update)
        if replaced & seen:
            update = {k: v for k, v in update.items() if k not in seen}
        seen |= replaced
        if update:
            out.append((path, update))
    out.reverse()
    return out


def _paused_children(
    tables: Tables, saver: Checkpointer, snapshot: StateSnapshot, checkpoint: Checkpoint
) -> StateSnapshot:
    """Return ``snapshot`` (of ``checkpoint``) with ``subgraphs``: the snapshot of each child
    paused in it.

    A child is keyed by its path; when several entries of one subgraph node are paused (a
    ``Send`` fan-out), by its path and its place among them: ``review[0]``, ``review[1]``.
    """
    meta, thread_id = checkpoint.meta, checkpoint.thread_id
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
            thread = child_thread(thread_id, name, meta, task)
            inner, last = threads.get_state(child.tables, saver, thread, None)
            inner = _paused_children(child.tables, saver, inner, last)
            found[key] = inner
            found.update((f"{key}/{path}", deeper) for path, deeper in inner.subgraphs.items())
    return dataclasses.replace(snapshot, subgraphs=found)
