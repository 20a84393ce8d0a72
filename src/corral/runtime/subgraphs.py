"""Running a subgraph node: the child graph as a run of its own, inside its parent's step.

A subgraph node is not a node run. When the engine reaches one, it hands the task to a
:class:`ChildGraph` (compiled once with the parent app), which runs the child to its end
(or its next pause) and returns a :class:`ChildOutcome`: the **writes** to hand back to the
parent, in the order the child merged them, and how many node runs the child took. The
engine merges those writes through the parent's reducers, in order, like the updates of
that many nodes, so a list the child appended to gets each appended item once (the child
started from the parent's list; handing back its final list would duplicate it).

- In: the parent's values of the keys both schemas share, or ``input(state)``; a ``Send``
  argument replaces the parent's state as ``input``'s argument (or is the child's input).
- Out: each child write restricted to the shared keys, named by path (``research/search``),
  or with ``output=`` one write, ``output(final_child_state)``.
- Counting: the child gets ``min(its own max_steps, what is left of the top-level run's)``
  steps; every child node run counts toward the parent's steps. Its guards and ``max_runs``
  count per entry, because each entry is a fresh child run.
- Checkpoints: with a checkpointer, the child runs on a thread of its own in the same store,
  named after the parent's thread, the node's path and the entry (the parent's run and
  superstep and the task's place in it), so running the same task again after a crash or a
  pause finds the child where it stopped: a child that finished is not run again (its writes
  are read back from its checkpoints), an interrupted one is resumed with the answer, a
  crashed one continues from its last checkpoint.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from corral.control import Resume
from corral.errors import CheckpointError, CorralError, NodeError, StepLimitError
from corral.runtime.events import (
    Custom,
    Event,
    Interrupt,
    NodeEnd,
    NodeRetry,
    NodeStart,
    StateSnapshot,
)
from corral.runtime.interrupts import _Pause
from corral.runtime.run_state import Call, RunState, TaskResult
from corral.runtime.state import is_flat
from corral.runtime.tables import NO_ARG, Tables, Task
from corral.spec import SubgraphSpec

if TYPE_CHECKING:
    from corral.checkpoint.base import Checkpointer
    from corral.runtime.app import CompiledGraph

__all__ = [
    "ChildGraph",
    "ChildOutcome",
    "ChildPause",
    "ChildWrites",
    "accept_child",
    "child_thread",
    "expand",
    "kept",
    "paused_children",
    "run_child_async",
    "run_child_sync",
]

_NOT_NODE = re.compile(r"^__\w+__$")


class ChildOutcome(NamedTuple):
    """What one entry into a subgraph gave its parent."""

    writes: list[tuple[str, dict[str, Any]]]
    """``(path, update)`` pairs for the parent to merge, in order."""
    steps: int
    """Node runs the child took in this call (toward the top-level ``max_steps``)."""
    interrupt: Interrupt | None
    """The child's pending pause, named by path, when it paused."""
    trace: list[tuple[int, str, dict[str, Any] | None, float]]
    """The child's node runs of this call, named by path, steps counted from 1."""


def child_thread(thread_id: str, path: str, entry: str) -> str:
    """Return the thread the child of ``path`` runs on for one entry of the parent's run."""
    return f"{thread_id}/{path}@{entry}"


class ChildGraph:
    """The child of one subgraph node, compiled once with the parent app."""

    def __init__(
        self, name: str, sub: SubgraphSpec, checkpointer: Checkpointer | None
    ) -> None:
        from corral.runtime.app import CompiledGraph

        self.name = name
        self.sub = sub
        self.shared = frozenset(sub.shared)
        self.app: CompiledGraph[Any] = CompiledGraph(sub.graph, checkpointer=checkpointer)
        self.checkpointer = checkpointer

    # ------------------------------------------------------------------ in and out

    def child_input(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """Return the child's input from the parent's state (or a ``Send`` argument)."""
        if self.sub.input is not None:
            mapped = self.sub.input(state)
            if not isinstance(mapped, Mapping):
                msg = (
                    f"input= of subgraph {self.name!r} returned {type(mapped).__name__}; "
                    "return a dict of the child's keys"
                )
                raise CorralError(msg)
            return dict(mapped)
        return {k: v for k, v in state.items() if k in self.shared}

    def _writes(
        self, raw: list[tuple[str, Mapping[str, Any] | None]], final: Mapping[str, Any]
    ) -> list[tuple[str, dict[str, Any]]]:
        if self.sub.output is not None:
            update = self.sub.output(final)
            if update is None:
                return []
            return [(self.name, dict(update))]
        out: list[tuple[str, dict[str, Any]]] = []
        for node, update in raw:
            if not update or _NOT_NODE.match(node):
                continue
            kept = {k: v for k, v in update.items() if k in self.shared}
            if kept:
                out.append((f"{self.name}/{node}", kept))
        return out

    # ------------------------------------------------------------------ running

    def plan(
        self, state: Mapping[str, Any], thread: str | None, answers: list[Any]
    ) -> tuple[Any, bool]:
        """Return what to call the child with, and whether it already finished.

        Without a checkpointer the child always starts from its input. With one, the
        child's thread says where this entry stands.
        """
        if thread is None or self.checkpointer is None:
            return self.child_input(state), False
        try:
            snapshot = self.app.get_state(thread)
        except CheckpointError:
            return self.child_input(state), False
        if snapshot.status == "done":
            return None, True
        if snapshot.status == "interrupted":
            if not answers:
                return None, False  # still waiting: the child pauses again at once
            return Resume(answers[-1]), False
        return None, False

    def outcome(self, rs: RunState | None, thread: str | None, offset: int) -> ChildOutcome:
        """Return the parent's view of a finished (or paused) child run.

        ``rs`` is ``None`` when the child had already finished before this call (its writes
        and node runs are read back from its thread).
        """
        if rs is not None and rs.status == "interrupted" and rs.interrupts:
            first = rs.interrupts[0]
            pause = Interrupt(
                f"{self.name}/{first.id}", f"{self.name}/{first.node}", first.value, first.when
            )
            return ChildOutcome([], rs.steps, pause, self._trace(rs, offset))
        if thread is not None and self.checkpointer is not None:
            raw: list[tuple[str, Mapping[str, Any] | None]] = [
                (node, update)
                for checkpoint in self.checkpointer.checkpoints(thread)
                for node, update in checkpoint.writes
            ]
            snapshot = self.app.get_state(thread)
            final: Mapping[str, Any] = snapshot.values
            steps = rs.steps if rs is not None else snapshot.steps
        else:
            assert rs is not None and rs.log is not None
            raw = list(rs.log)
            final, steps = rs.values, rs.steps
        return ChildOutcome(self._writes(raw, final), steps, None, self._trace(rs, offset))

    def _trace(
        self, rs: RunState | None, offset: int
    ) -> list[tuple[int, str, dict[str, Any] | None, float]]:
        if rs is None:
            return []
        name = self.name
        return [(offset + item[0], f"{name}/{item[1]}", *item[2:]) for item in rs.trace]

    def forward(
        self, emit: Callable[[Event], None] | None, offset: int
    ) -> Callable[[Event], None] | None:
        """Return an event callback that hands the child's node events to ``emit``, by path."""
        if emit is None:
            return None
        name = self.name

        def relay(event: Event) -> None:
            if isinstance(event, NodeStart):
                emit(NodeStart(offset + event.step, f"{name}/{event.node}", event.superstep,
                               event.send))  # fmt: skip
            elif isinstance(event, NodeEnd):
                emit(NodeEnd(offset + event.step, f"{name}/{event.node}", event.update,
                             event.seconds))  # fmt: skip
            elif isinstance(event, Custom | NodeRetry):
                emit(dataclasses.replace(event, node=f"{name}/{event.node}",
                                         step=offset + event.step))  # fmt: skip

        return relay

    def _start(self, state: Mapping[str, Any], thread: str | None, answers: list[Any],
               budget: int, top: tuple[int, int], deps: Any,
               emit: Callable[[Event], None] | None) -> RunState | None:  # fmt: skip
        from corral.runtime import threads

        if thread is None and self.sub.input is None:
            return self._start_plain(state, budget, top, deps, emit)
        start, finished = self.plan(state, thread, answers)
        if finished:
            return None
        rs = threads.start(
            self.app._settings,
            start,
            thread_id=thread,
            checkpoint_id=None,
            max_steps=self._cap(budget),
            deps=deps,
            emit=self.forward(emit, top[0]),
            buffer=None,
        )
        if thread is None:
            rs.log = []  # the writes are read back from it (a thread keeps them otherwise)
        return rs

    def _start_plain(self, state: Mapping[str, Any], budget: int, top: tuple[int, int],
                     deps: Any, emit: Callable[[Event], None] | None) -> RunState:  # fmt: skip
        """Start an entry with no thread and no ``input=``: the shared values, as they are.

        What ``threads.start`` does for a fresh run, without checking or merging an input
        whose keys are the child's by construction (they are the shared keys).
        """
        from corral.runtime import threads

        settings = self.app._settings
        rs = threads.new_run(settings, self._cap(budget), None, deps)
        relay = self.forward(emit, top[0])
        if relay is not None:
            rs.listen(relay)
        tables = settings.tables
        empties = tables.empties
        values = {k: copy.copy(v) for k, v in empties.items()}
        shared = self.shared
        # A reducer key gets its own copy, as merging the input from empty would give it.
        values.update(
            (k, copy.copy(v) if k in empties else v) for k, v in state.items() if k in shared
        )
        rs.values = values
        rs.flat = is_flat(values)
        rs.tasks = [Task(tables.nodes[name], NO_ARG) for name in tables.starts]
        rs.log = []
        return rs

    def run_sync(
        self,
        state: Mapping[str, Any],
        *,
        thread: str | None,
        answers: list[Any],
        budget: int,
        top: tuple[int, int],
        deps: Any,
        emit: Callable[[Event], None] | None,
    ) -> ChildOutcome:
        """Run (or resume) the child to its end or next pause; see :meth:`plan`."""
        from corral.runtime.drivers import run_sync

        try:
            rs = self._start(state, thread, answers, budget, top, deps, emit)
            if rs is not None:
                for _ in run_sync(rs):
                    pass
        except CorralError as exc:
            raise self._lift(exc, budget, top) from exc.__cause__
        return self.outcome(rs, thread, top[0])

    async def run_async(
        self,
        state: Mapping[str, Any],
        *,
        thread: str | None,
        answers: list[Any],
        budget: int,
        top: tuple[int, int],
        deps: Any,
        emit: Callable[[Event], None] | None,
    ) -> ChildOutcome:
        """Run (or resume) the child like :meth:`run_sync`, on the running event loop."""
        from corral.runtime.drivers import run_async

        try:
            rs = self._start(state, thread, answers, budget, top, deps, emit)
            if rs is not None:
                async for _ in run_async(rs):
                    pass
        except CorralError as exc:
            raise self._lift(exc, budget, top) from exc.__cause__
        return self.outcome(rs, thread, top[0])

    def _cap(self, budget: int) -> int:
        return max(1, min(self.app.max_steps, budget))

    def _lift(self, exc: CorralError, budget: int, top: tuple[int, int]) -> CorralError:
        """Return the child's error as the parent reports it: node names become paths."""
        steps_before, max_steps = top
        if isinstance(exc, StepLimitError):
            path = f"{self.name}/{exc.node}"
            if budget < self.app.max_steps and exc.steps >= budget:
                steps = steps_before + exc.steps
                msg = (
                    f"stopped after {steps} steps (max_steps={max_steps}) before running "
                    f"{path!r}; raise max_steps or add a guard"
                )
                return StepLimitError(msg, steps=steps, max_steps=max_steps, node=path,
                                      state=exc.state)  # fmt: skip
            msg = (
                f"subgraph {self.name!r} stopped after {exc.steps} steps (its max_steps="
                f"{exc.max_steps}) before running {path!r}; raise the child graph's "
                "max_steps or add a guard"
            )
            return StepLimitError(msg, steps=exc.steps, max_steps=exc.max_steps, node=path,
                                  state=exc.state)  # fmt: skip
        if isinstance(exc, NodeError):
            path = f"{self.name}/{exc.node}"
            msg = f"in subgraph {self.name!r}: {exc}"
            return NodeError(msg, node=path, step=steps_before + exc.step, attempts=exc.attempts)
        return exc


# --------------------------------------------------------------------------- engine hooks


class ChildWrites(dict[str, Any]):
    """A subgraph entry's result at the barrier: no update of its own, the child's writes."""

    __slots__ = ("pairs", "steps")

    def __init__(self, pairs: list[tuple[str, dict[str, Any]]], steps: int) -> None:
        super().__init__()
        self.pairs = pairs
        """The child's writes, ``(path, update)``, to merge in order."""
        self.steps = steps
        """The child's node runs, counted in the parent's steps."""


class ChildPause(_Pause):
    """A pause inside a subgraph's child, surfaced as a pause of the subgraph task."""

    def __init__(self, interrupt: Interrupt, index: int) -> None:
        super().__init__(interrupt.value, index)
        self.interrupt = interrupt


def _arguments(
    rs: RunState, call: Call, values: dict[str, Any], answers: list[Any] | None
) -> dict[str, Any]:
    thread = None
    if rs.checkpoints is not None and rs.thread_id is not None:
        run = getattr(rs.checkpoints, "run", 0)
        entry = f"{run}.{rs.supersteps + 1}.{call.position}"
        thread = child_thread(rs.thread_id, call.node.name, entry)
    return {
        "state": values if call.arg is NO_ARG else call.arg,
        "thread": thread,
        "answers": list(answers or ()),
        "budget": rs.max_steps - rs.steps,
        "top": (rs.steps, rs.max_steps),
        "deps": rs.deps,
        "emit": rs.emit,
    }


def _surface(outcome: ChildOutcome, answers: list[Any] | None) -> ChildOutcome:
    if outcome.interrupt is not None:
        raise ChildPause(outcome.interrupt, len(answers or ()))
    return outcome


def run_child_sync(
    rs: RunState, call: Call, values: dict[str, Any], answers: list[Any] | None
) -> ChildOutcome:
    """Run the child of subgraph task ``call``; raise ``ChildPause`` when it paused."""
    child: ChildGraph = call.node.child
    return _surface(child.run_sync(**_arguments(rs, call, values, answers)), answers)


async def run_child_async(
    rs: RunState, call: Call, values: dict[str, Any], answers: list[Any] | None
) -> ChildOutcome:
    """Run the child of subgraph task ``call`` on the running loop, like :func:`run_child_sync`."""
    child: ChildGraph = call.node.child
    return _surface(await child.run_async(**_arguments(rs, call, values, answers)), answers)


def accept_child(rs: RunState, call: Call, out: ChildOutcome) -> TaskResult:
    """Count a subgraph entry: its child's node runs are steps; the entry is one run of it."""
    name = call.node.name
    rs.steps += out.steps
    rs.runs[name] = rs.runs.get(name, 0) + 1
    rs.trace.extend(out.trace)
    return TaskResult(call.position, call.node, ChildWrites(out.writes, out.steps), None)


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


def kept(rs: RunState, results: list[TaskResult]) -> list[TaskResult]:
    """Drop finished subgraph entries (and their counts) from a superstep cut short.

    Run again on resume, such an entry finds its child's thread finished and reads the
    child's writes and node runs back from it instead of running the child again.
    """
    out: list[TaskResult] = []
    for result in results:
        update = result.update
        if type(update) is ChildWrites:
            rs.steps -= update.steps
            rs.runs[result.node.name] -= 1
        else:
            out.append(result)
    return out


def paused_children(
    tables: Tables, saver: Checkpointer, snapshot: StateSnapshot, thread_id: str
) -> StateSnapshot:
    """Return ``snapshot`` with ``subgraphs``: the snapshot of each child paused in it."""
    chain = saver.chain(thread_id, snapshot.checkpoint_id)
    meta = chain[-1].meta if chain else {}
    found: dict[str, StateSnapshot] = {}
    for pause in meta.get("interrupts", []):
        name = str(pause.get("node", "")).partition("/")[0]
        node = tables.nodes.get(name)
        if node is None or node.child is None or name in found:
            continue
        entry = f"{meta.get('run', 0)}.{int(meta.get('supersteps', 0)) + 1}.{pause['task']}"
        child: ChildGraph = node.child
        inner = child.app.get_state(child_thread(thread_id, name, entry), subgraphs=True)
        found[name] = inner
        found.update((f"{name}/{path}", deeper) for path, deeper in inner.subgraphs.items())
    return dataclasses.replace(snapshot, subgraphs=found)
