"""Running a subgraph node: the child graph as a run of its own, inside its parent's step.

A subgraph node is not a node run. When the engine reaches one, it hands the task to a
:class:`ChildGraph` (compiled once with the parent app, its tables and start tasks built
then), which runs the child to its end (or its next pause) and returns a
:class:`ChildOutcome`: the **writes** to hand back to the parent, in the order the child
merged them, and how many node runs the child took. The engine merges those writes through
the parent's reducers, in order, like the updates of that many nodes, so a list the child
appended to gets each appended item once (the child started from the parent's list; handing
back its final list would duplicate it). Of several writes of one entry to a key without a
reducer only the last is handed back: they replace each other in order, as they would have
in the parent, and must not look like parallel writes at the parent's barrier.

- In: the parent's values of the keys both schemas share, or ``input(state)``; a ``Send``
  argument replaces the parent's state as ``input``'s argument (or is the child's input).
- Out: each child write restricted to the shared keys, named by path (``research/search``),
  or with ``output=`` one write, ``output(final_child_state)``.
- Counting: the child runs under a cap of ``min(its own max_steps, what is left of the
  top-level run's)``; concurrent entries (async) share what is left through a
  :class:`~corral.runtime.child_steps.StepPool`, so every node run anywhere counts toward the
  top-level ``max_steps`` at the moment it starts. Its guards and ``max_runs`` count per
  entry, because each entry is a fresh child run.
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
import operator
import secrets
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from corral.control import Resume
from corral.errors import CorralError
from corral.reducers import add_messages, append, merge, union
from corral.runtime import persist, restore
from corral.runtime.child_steps import Entry, lift_error
from corral.runtime.events import Interrupt
from corral.runtime.routing import pauses_before
from corral.runtime.run_state import RunState
from corral.runtime.state import ListNotes
from corral.runtime.tables import NO_ARG, Tables, Task
from corral.spec import SubgraphSpec

if TYPE_CHECKING:
    from corral.checkpoint.base import Checkpointer
    from corral.runtime.app import CompiledGraph

__all__ = ["ChildGraph", "ChildOutcome", "child_thread"]

Trace = list[tuple[int, str, dict[str, Any] | None, float]]


class ChildOutcome(NamedTuple):
    """What one entry into a subgraph gave its parent."""

    writes: list[tuple[str, dict[str, Any]]]
    """``(path, update)`` pairs for the parent to merge, in order."""
    steps: int
    """Node runs the child took in this call (toward the top-level ``max_steps``)."""
    interrupts: tuple[Interrupt, ...]
    """The child's pending pauses, named by path, when it paused (else empty)."""
    trace: Trace
    """The child's node runs of this call, named by path, numbered as the parent's steps."""
    final: dict[str, Any] | None = None
    """The child's final values of the keys its writes hand back, when each of those keys
    has the same reducer in both graphs and the child started from the parent's values
    (a fresh entry without ``input=`` or ``output=``): merging the writes into the parent's
    values it started from gives these values."""


_PURE_REDUCERS: frozenset[Any] = frozenset(
    (operator.add, operator.or_, append, add_messages, merge, union)
)
"""Reducers that return a new value and never change the one they are given: a child may
start from the parent's value itself (any other reducer gets a copy, so that it cannot
change the parent's value in place)."""


def child_thread(thread_id: str, path: str, meta: Mapping[str, Any], task: int) -> str:
    """Return the thread the child of ``path`` runs on for task ``task`` of the superstep
    after the parent's checkpoint ``meta``: ``T/path@RUN.SUPERSTEP.TASK``, and ``~FORK``
    after it on a fork's branch, so that a fork runs the child afresh."""
    entry = f"{meta.get('run', 0)}.{int(meta.get('supersteps', 0)) + 1}.{task}"
    fork = meta.get("fork")
    return f"{thread_id}/{path}@{entry}~{fork}" if fork else f"{thread_id}/{path}@{entry}"


class ChildGraph:
    """The child of one subgraph node, compiled once with the parent app."""

    def __init__(
        self,
        name: str,
        sub: SubgraphSpec,
        checkpointer: Checkpointer | None,
        parent: Tables,
        *,
        pauses: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
    ) -> None:
        """Compile the child of subgraph node ``name``.

        ``pauses`` are the parent's ``interrupt_before`` and ``interrupt_after``: the paths
        inside this child (``name/node``) become the child's own.
        """
        from corral.runtime.app import CompiledGraph

        self.name = name
        self.sub = sub
        before, after = (tuple(_inside(name, paths)) for paths in pauses)
        self.app: CompiledGraph[Any] = CompiledGraph(
            sub.graph, checkpointer=checkpointer, interrupt_before=before, interrupt_after=after
        )
        self.checkpointer = checkpointer
        self._made_writer: persist.ThreadWriter | None = None
        settings = self.app._settings
        self.settings = settings
        self.fresh_settings = settings._replace(checkpointer=None)
        tables = self.tables = settings.tables
        self.shared = frozenset(sub.shared)
        self.max_steps = self.app.max_steps
        self.paths = {node: f"{name}/{node}" for node in tables.nodes}
        self.starts = tuple(Task(tables.nodes[node], NO_ARG) for node in tables.starts)
        self.first = self.paths[tables.starts[0]] if tables.starts else name
        template = self.template = RunState(
            tables, max_steps=self.max_steps, deps=None, thread_id=None
        )
        """What a fresh entry's run is a copy of (see :meth:`RunState.entered`)."""
        template.pause_before, template.pause_after = settings.pause_before, settings.pause_after
        template.tasks = self.starts
        # A fresh entry's state: the shared values (a reducer key's in a copy of its own, as
        # merging the input from empty would give it) and the empties of the child's own.
        self.copied = frozenset(
            k
            for k in sub.shared
            if k in tables.empties and tables.reducers[k] not in _PURE_REDUCERS
        )
        self.own_empties = {k: v for k, v in tables.empties.items() if k not in self.shared}
        self.takes_all = parent.keyset <= self.shared and not self.copied and not self.own_empties
        """The child starts from all of the parent's values as they are (a copy of the dict)."""
        self.all_shared = tables.keyset <= self.shared
        """Every child key is the parent's: a child update is handed back as it is."""
        self.last_write = parent.last_write
        """The parent's keys without a reducer."""
        self.same_merge = frozenset(
            k
            for k in sub.shared
            if k in parent.reducers and parent.reducers[k] is tables.reducers.get(k)
        )
        """The shared keys that merge alike in both graphs (the same reducer, or none)."""
        self.mapped = sub.input is not None or sub.output is not None

    def _writer(self, thread: str) -> persist.ThreadWriter:
        """Return the checkpoint writer of a fresh entry's thread: a copy of one made once,
        so that each entry does not ask again what kind of store the checkpointer is (a
        protocol check costs more than the rest of the writer)."""
        made = self._made_writer
        if made is None:
            assert self.checkpointer is not None
            made = self._made_writer = persist.ThreadWriter(
                self.checkpointer, self.tables, thread, parent_id=None, seq=0,
                since_snapshot=0, run=1, force_snapshot=True,
            )  # fmt: skip
        writer: persist.ThreadWriter = object.__new__(persist.ThreadWriter)
        writer.__dict__.update(made.__dict__)
        writer.thread_id = thread
        writer.token = secrets.token_hex(4)
        return writer

    # ------------------------------------------------------------------ in and out

    def is_entry(self, node: str) -> bool:
        """Return whether ``node`` (a child's node, or a path inside a grandchild) is a
        subgraph node of the child: its ``NodeStart`` opens an entry, not a node run."""
        name, _, inside = node.partition("/")
        found = self.tables.nodes.get(name)
        if found is None or found.child is None:
            return False
        return not inside or bool(found.child.is_entry(inside))

    def path(self, node: str) -> str:
        """Return the path of the child's ``node`` (a path itself inside a grandchild)."""
        found = self.paths.get(node)
        return found if found is not None else f"{self.name}/{node}"

    def child_input(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Return the child's input from ``input=`` (``state``: the parent's or a ``Send``'s)."""
        assert self.sub.input is not None
        mapped = self.sub.input(state)
        if not isinstance(mapped, Mapping):
            msg = (
                f"input= of subgraph {self.name!r} returned {type(mapped).__name__}; "
                "return a dict of the child's keys"
            )
            raise CorralError(msg)
        return dict(mapped)

    def _fresh(self, state: Mapping[str, Any], deps: Any, notes: ListNotes | None = None,
               *, whole: bool = False) -> RunState:  # fmt: skip
        """Return a new child run from ``state``, its writes kept in ``rs.log``.

        ``notes``: the parent's list notes, which the child may share (they note lists);
        ``whole``: ``state`` is the parent's state (not a ``Send`` argument).
        """
        if self.sub.input is not None:
            from corral.runtime import threads

            rs = threads.start(self.fresh_settings, self.child_input(state), thread_id=None,
                               checkpoint_id=None, max_steps=None, deps=deps, emit=None,
                               buffer=None)  # fmt: skip
            rs.log = []
            return rs
        if whole and self.takes_all:
            values = dict(state)
        else:
            values = {k: copy.copy(v) for k, v in self.own_empties.items()}
            shared, copied = self.shared, self.copied
            for key, value in state.items():
                if key in shared:
                    values[key] = copy.copy(value) if key in copied else value
        return self.template.entered(values, deps, ListNotes() if notes is None else notes, [])

    def writes(
        self, raw: list[tuple[str, dict[str, Any]]], final: Mapping[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        """Return the parent's writes of one entry: ``raw`` child writes, or ``output``'s."""
        if self.sub.output is not None:
            update = self.sub.output(final)
            return [] if update is None else [(self.name, dict(update))]
        paths = self.paths
        if self.all_shared:
            out = [(paths.get(node) or self.path(node), update) for node, update in raw if update]
        else:
            shared = self.shared
            out = []
            for node, update in raw:
                if update:
                    kept = {k: v for k, v in update.items() if k in shared}
                    if kept:
                        out.append((self.path(node), kept))
        if len(out) > 1 and self.last_write:
            out = _last_only(out, self.last_write)
        return out

    # ------------------------------------------------------------------ running

    def _final_of(
        self, writes: list[tuple[str, dict[str, Any]]], rs: RunState
    ) -> dict[str, Any] | None:
        """Return the child's final values of the keys ``writes`` write, when merging
        ``writes`` into the parent's state gives them (see ``ChildOutcome.final``)."""
        if self.mapped:
            return None
        same, values = self.same_merge, rs.values
        final: dict[str, Any] = {}
        for _, update in writes:
            if not same.issuperset(update):
                return None
            for key in update:
                final[key] = values[key]
        return final

    def _where(self, thread: str) -> tuple[str, tuple[str, ...]]:
        """Return the status of the child's thread (``"new"`` when it has none) and its
        pending interrupt ids."""
        assert self.checkpointer is not None
        chain = self.checkpointer.chain(thread)
        if not chain:
            return "new", ()
        last = chain[-1]
        ids = tuple(str(pause.id) for pause in restore.pauses_of(last))  # each with an id
        return str(last.meta.get("status", "running")), ids

    def begin(self, entry: Entry) -> tuple[RunState | None, bool]:
        """Return the child run of this call (``None``: it finished before) and whether it
        starts fresh (its writes then all come from ``rs.log``)."""
        thread = entry.thread
        if thread is not None:
            status, pending = self._where(thread)
            if status == "done":
                return None, False
            if status != "new":
                return self._again(entry, thread, status, pending), False
        rs = self._fresh(entry.state, entry.deps, whole=entry.whole)
        if thread is not None:
            assert self.checkpointer is not None
            rs.thread_id = thread
            rs.checkpoints = self._writer(thread)
            pauses = pauses_before(rs, rs.tasks) if rs.pause_before else []
            if pauses or len(rs.tasks) > 1:  # finished tasks are recorded against one
                rs.checkpoints.name_pauses(rs, pauses)
                rs.checkpoints.put(rs, [], "interrupted" if pauses else "running", "input", pauses)
                if pauses:
                    rs.pause(pauses)
        entry.relay.attach(rs)
        return rs, True

    def _again(self, entry: Entry, thread: str, status: str, pending: tuple[str, ...]) -> RunState:
        """Return the run that continues the child's thread (resumed with its answers)."""
        from corral.runtime import threads

        start: Resume | None = None
        if status == "interrupted":
            given: dict[str, Any] = {}
            for answer in entry.answers:
                given.update(answer)
            chosen = {i: given[i] for i in pending if i in given}
            start = Resume(chosen) if chosen else None  # none: it pauses again at once
        rs = threads.start(self.settings, start, thread_id=thread, checkpoint_id=None,
                           max_steps=None, deps=entry.deps, emit=None,
                           buffer=None)  # fmt: skip
        counted = rs.steps if status == "interrupted" else self._counted(thread)
        entry.relay.attach(rs, counted)
        return rs

    def _counted(self, thread: str) -> int:
        """Return the child's runs the parent counted already: those before its last pause
        (the parent adds a child's runs to its steps when the child pauses)."""
        assert self.checkpointer is not None
        for checkpoint in reversed(self.checkpointer.chain(thread)):
            if checkpoint.meta.get("status") == "interrupted":
                return int(checkpoint.meta.get("steps", 0))
        return 0

    def outcome(self, rs: RunState | None, fresh: bool, entry: Entry) -> ChildOutcome:
        """Return the parent's view of a finished (or paused) child run.

        ``rs`` is ``None`` when the child had already finished before this call; its writes
        are then read back from its thread, as are those of a child resumed in this call.
        """
        relay, thread = entry.relay, entry.thread
        if rs is not None and rs.status == "interrupted" and rs.interrupts:
            name = self.name
            pauses = tuple(
                Interrupt(f"{name}/{i.id}", f"{name}/{i.node}", i.value, i.when)
                for i in rs.interrupts
            )
            return ChildOutcome([], rs.steps - relay.counted, pauses, relay.trace(rs))
        if fresh:
            assert rs is not None and rs.log is not None  # an entry keeps its writes
            writes = self.writes(rs.log, rs.values)
            merged = self._final_of(writes, rs) if entry.whole else None
            return ChildOutcome(writes, rs.steps, (), relay.trace(rs), merged)
        assert thread is not None and self.checkpointer is not None
        chain = self.checkpointer.checkpoints(thread)
        raw = [
            (node, dict(update))
            for checkpoint in chain
            for node, update in checkpoint.writes
            if not (node.startswith("__") and node.endswith("__"))  # the input, an update
        ]
        if rs is not None:
            final: Mapping[str, Any] = rs.values
            steps = rs.steps - relay.counted
        else:
            final = restore.rebuild(self.tables, self.checkpointer.chain(thread))
            steps = int(chain[-1].meta.get("steps", 0)) if chain else 0
            steps -= self._counted(thread)
        trace = relay.trace(rs) if rs is not None else []
        return ChildOutcome(self.writes(raw, final), steps, (), trace)

    def run_sync(self, entry: Entry) -> ChildOutcome:
        """Run (or resume) the child to its end or next pause; see :meth:`begin`."""
        rs: RunState | None = None
        try:
            rs, fresh = self.begin(entry)
            if rs is not None:
                for _ in _drivers().run_sync(rs):
                    pass
        except CorralError as exc:
            raise lift_error(exc, self.name, self.max_steps, entry.relay) from exc.__cause__
        finally:
            entry.relay.done(rs)
        return self.outcome(rs, fresh, entry)

    async def run_async(self, entry: Entry) -> ChildOutcome:
        """Run (or resume) the child like :meth:`run_sync`, on the running event loop."""
        rs: RunState | None = None
        try:
            rs, fresh = self.begin(entry)
            if rs is not None:
                async for _ in _drivers().run_async(rs):
                    pass
        except CorralError as exc:
            raise lift_error(exc, self.name, self.max_steps, entry.relay) from exc.__cause__
        finally:
            entry.relay.done(rs)
        return self.outcome(rs, fresh, entry)


_DRIVERS: list[ModuleType] = []


def _drivers() -> ModuleType:
    """Return :mod:`corral.runtime.drivers` (it imports this module, so not at load time).

    Kept once found: an import statement in the call path of every entry costs a node run's
    worth of time.
    """
    if not _DRIVERS:
        from corral.runtime import drivers

        _DRIVERS.append(drivers)
    return _DRIVERS[0]


def _inside(name: str, paths: tuple[str, ...]) -> Iterator[str]:
    """Yield the paths of ``paths`` inside subgraph ``name``, relative to its child."""
    prefix = f"{name}/"
    for path in paths:
        if path.startswith(prefix):
            yield path[len(prefix) :]


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
