"""The superstep core: every rule of a run, with no I/O of its own.

A run is a sequence of supersteps. In each one the active tasks (a node, or a node with a
``Send`` argument) all read the same state; their updates are merged at the barrier in task
order (node registration order, ``Send`` runs in the order sent); then the routes of the
tasks that ran are taken on the merged state, giving the next tasks (plain targets
de-duplicated, every ``Send`` its own task). A join (``wait_for``) is held until every node
it waits for has finished a run since the join's own last run; a run that would end while a
join still waits raises :class:`~corral.errors.StuckJoinError`.

Bounds are checked before each node run: the run's step count against ``max_steps`` and the
node's run count against ``max_runs``; a guarded route is counted when taken and, once used
up, redirected to its guard's ``otherwise`` target (or the run stops with
``GuardExhaustedError``). A node run counts when it completes, so one cut short by
``interrupt()`` counts once, when it finally completes.

This module decides; it never calls a node or a router and never awaits (the shape of
``graphlib.TopologicalSorter``: the caller owns the loop). A driver
(:mod:`corral.runtime.drivers`) asks a :class:`Superstep` for the calls it may make, hands
back each outcome (:meth:`Superstep.finished`, :meth:`~Superstep.paused`,
:meth:`~Superstep.failed`), closes the barrier, calls the routers the core names and hands
their answers to a :class:`Routing`. Checkpoints are written through
``RunState.checkpoints`` and events through ``RunState.emit`` at the points decided here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corral.control import Command, Send
from corral.errors import (
    ConcurrentRunError,
    CorralError,
    InvalidUpdateError,
    NodeCapError,
    NodeError,
    RouteError,
    StepLimitError,
)
from corral.runtime.attempts import attempts_of
from corral.runtime.events import NodeEnd, NodeStart, RunEnd
from corral.runtime.interrupts import _Pause
from corral.runtime.routing import Routing, named_sends, sends_a_function, stuck_join
from corral.runtime.run_state import Call, Pause, RunState, Targets, TaskResult
from corral.runtime.state import apply_writes, is_flat
from corral.runtime.subgraphs import (
    ChildOutcome,
    ChildPause,
    accept_child,
    expand,
    merged_by_child,
    number_entries,
)
from corral.runtime.tables import NO_ARG, Node

__all__ = [
    "Superstep",
    "accept",
    "end_run",
    "merge",
    "node_error",
    "note_joins",
    "router_error",
]


_new = tuple.__new__
"""Build a record (a NamedTuple) without its Python-level ``__new__``: a third of the time."""


# --------------------------------------------------------------------------- caps


def cap_error(rs: RunState, node: Node, steps: int, runs: int) -> CorralError | None:
    """Return the error a run of ``node`` would hit now, or ``None`` if it may run."""
    if steps >= rs.max_steps:
        msg = (
            f"stopped after {steps} steps (max_steps={rs.max_steps}) before running "
            f"{node.name!r}; raise max_steps or add a guard"
        )
        return StepLimitError(
            msg, steps=steps, max_steps=rs.max_steps, node=node.name, state=rs.values
        )
    if node.max_runs is not None and runs >= node.max_runs:
        msg = (
            f"node {node.name!r} already ran {runs} times (max_runs={node.max_runs}); "
            f"raise its max_runs or guard the route that leads back to it"
        )
        return NodeCapError(msg, node=node.name, max_runs=node.max_runs, state=rs.values)
    return None


# --------------------------------------------------------------------------- outcomes


def node_error(node: str, step: int, exc: BaseException) -> NodeError:
    """Return the error that reports ``exc`` raised by a node run (after all its attempts)."""
    tries = attempts_of(exc)
    after = f" on attempt {tries} of {tries}" if tries > 1 else ""
    msg = (
        f"node {node!r} raised {type(exc).__name__}: {exc} (step {step}{after}); fix it, or "
        f"catch the error inside it and return an update that records it"
    )
    return NodeError(msg, node=node, step=step, attempts=tries)


def router_error(router: str, node: str, step: int, exc: BaseException) -> NodeError:
    """Return the error that reports ``exc`` raised by the router of ``node``."""
    msg = (
        f"router {router!r} of node {node!r} raised {type(exc).__name__}: {exc} (step "
        f"{step}); fix it, or catch the error inside it and return an update that records it"
    )
    return NodeError(msg, node=node, step=step)


def accept(rs: RunState, call: Call, out: Any, seconds: float) -> TaskResult:
    """Check a node's return value, count the run, trace it and return its result."""
    position, node, _, step = call  # unpacked: a NamedTuple's fields read slower in 3.11
    if type(out) is dict and rs.tables.keyset.issuperset(out):
        update: dict[str, Any] | None = out
        goto = None
    elif out is None:
        update = goto = None
    elif type(out) is ChildOutcome:
        return accept_child(rs, call, out)
    else:
        update, goto = outcome(rs, node, out)
    rs.steps += 1
    name = node.name
    rs.runs[name] = rs.runs.get(name, 0) + 1
    if rs.retried and position in rs.retried:
        attempt = rs.retried.pop(position)
        rs.trace.append((step, name, update, seconds, attempt, None))  # type: ignore[arg-type]
    else:
        rs.trace.append((step, name, update, seconds))
    if rs.emit is not None:
        rs.emit(NodeEnd(step, name, update, seconds))
    return _new(TaskResult, (position, node, update, goto))


def outcome(rs: RunState, node: Node, out: Any) -> tuple[dict[str, Any] | None, Targets | None]:
    """Return the update and ``Command`` targets of a node's return value, or raise."""
    goto: Targets | None = None
    if out is None:
        update = None
    elif type(out) is dict:
        update = out
    elif isinstance(out, Command):
        update = out.update if out.update is None else _command_update(node, out.update)
        if out.goto is not None:
            goto = _command_targets(rs, node, out.goto)
    elif isinstance(out, dict):
        update = dict(out)
    else:
        msg = (
            f"node {node.name!r} returned {type(out).__name__} {_short(out)}; return a dict "
            f"of the keys it changes, None for no change, or a Command"
        )
        raise InvalidUpdateError(msg, node=node.name)
    keyset = rs.tables.keyset
    if update is not None and not keyset.issuperset(update):
        bad = next(k for k in update if k not in keyset)
        msg = (
            f"node {node.name!r} wrote key {bad!r}, which is not in the state schema "
            f"(keys: {sorted(keyset)}); add it to the schema or fix the key"
        )
        raise InvalidUpdateError(msg, node=node.name, key=bad if isinstance(bad, str) else None)
    return update, goto


def _command_update(node: Node, update: Any) -> dict[str, Any]:
    """Return a returned ``Command``'s update as a dict, or raise if it is not a mapping."""
    if isinstance(update, Mapping):
        return dict(update)
    msg = (
        f"node {node.name!r} returned Command(update={_short(update)}), whose update is "
        f"{type(update).__name__}, not a dict; give Command a dict of the keys it changes: "
        f"Command(update={{'key': value}}, goto=...)"
    )
    raise InvalidUpdateError(msg, node=node.name)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _command_targets(rs: RunState, node: Node, goto: Any) -> Targets:
    allowed = node.command or ()
    items: tuple[Any, ...] = tuple(goto) if isinstance(goto, (list, tuple)) else (goto,)
    for item in items:
        target = item.node if isinstance(item, Send) else item
        if isinstance(target, str) and target in allowed:
            continue
        if sends_a_function(goto):
            owner = f"node {node.name!r}"
            named = named_sends(goto, rs.tables.node_names, owner, node.name)
            return _command_targets(rs, node, named)
        if node.command is None:
            msg = (
                f"node {node.name!r} returned Command(goto={goto!r}) but its return "
                f"annotation names no Command targets; annotate it "
                f"-> Command[Literal[...]] or route it with then= or a router"
            )
        else:
            msg = (
                f"node {node.name!r} returned Command(goto={goto!r}), and {target!r} "
                f"is not one of its routes {list(allowed)}; goto one of them or add it "
                f"to its Command[Literal[...]] annotation"
            )
        raise RouteError(msg, router=node.name, value=goto, allowed=allowed)
    return items


# --------------------------------------------------------------------------- a superstep


class Superstep:
    """One superstep's calls and what came back from them, up to its barrier.

    ``calls`` are the tasks that may run now, in task order, each with its step number;
    ``cap_error`` is the bound hit after them. A failure or a cap hit is raised by
    :meth:`close`, after the finished siblings were saved.
    """

    __slots__ = (
        "calls",
        "cap_error",
        "failure",
        "number",
        "pauses",
        "record",
        "results",
        "rs",
        "values",
    )

    def __init__(self, rs: RunState, *, plan: bool = True) -> None:
        """``plan=False``: no calls are planned and no bound is checked; the caller hands
        back the one outcome it was given (``update_state(as_node=...)``: a person's edit,
        which no cap refuses)."""
        self.rs = rs
        self.values = rs.values
        """The state every task of this superstep reads."""
        self.number = rs.supersteps + 1
        self.results: list[TaskResult] = []
        self.pauses: list[Pause] = []
        self.calls: list[Call] = []
        self.cap_error: CorralError | None = None
        self.failure: CorralError | None = None
        """The first node failure or invalid return value of this superstep."""
        writer = rs.checkpoints
        # With several tasks, each finished one is recorded at once, so a crash in the
        # superstep re-runs only the tasks that had not finished.
        self.record = plan and writer is not None and writer.records_tasks and len(rs.tasks) > 1
        if not plan:
            return
        # Plan the calls: the tasks not finished earlier, each with its step number, up to
        # the first bound hit.
        steps = rs.steps
        max_steps = rs.max_steps
        done = rs.done
        planned: dict[str, int] = {}
        calls = self.calls
        for index, (node, arg) in enumerate(rs.tasks):
            if index in done:
                continue
            if steps >= max_steps or node.max_runs is not None:
                runs = rs.runs.get(node.name, 0) + planned.get(node.name, 0)
                error = cap_error(rs, node, steps, runs)
                if error is not None:
                    self.cap_error = error
                    return
                planned[node.name] = planned.get(node.name, 0) + 1
            if node.child is None:
                steps += 1
            calls.append(_new(Call, (index, node, arg, steps)))
        if rs.tables.has_subgraphs:
            number_entries(calls, steps)

    def started(self, call: Call) -> None:
        """Note that ``call`` is about to run."""
        emit = self.rs.emit
        if emit is not None:
            emit(NodeStart(call.step, call.node.name, self.number, call.arg is not NO_ARG))

    def record_early(self, call: Call, out: Any) -> None:
        """Record at once that ``call`` finished with ``out`` (before its siblings did)."""
        if not self.record or call.node.child is not None:
            return
        try:
            update, goto = outcome(self.rs, call.node, out)
        except CorralError:
            return  # reported in task order by finished()
        assert self.rs.checkpoints is not None
        self.rs.checkpoints.save_task(self.rs, TaskResult(call.position, call.node, update, goto))

    def finished(self, call: Call, out: Any, seconds: float, *, recorded: bool = False) -> bool:
        """Accept what ``call`` returned; return ``False`` if it was invalid (see ``close``)."""
        try:
            result = accept(self.rs, call, out, seconds)
        except CorralError as error:
            if self.failure is None:
                self.failure = error
            return False
        self.results.append(result)
        if self.record and not recorded and call.node.child is None:
            assert self.rs.checkpoints is not None
            self.rs.checkpoints.save_task(self.rs, result)
        return True

    def paused(self, call: Call, pause: _Pause) -> None:
        """Note that ``call`` stopped at an unanswered ``interrupt()``."""
        if isinstance(pause, ChildPause):  # inside a subgraph: each named by its path
            pause.count(self.rs)
            self.pauses.extend(pause.pauses(call.position))
            return
        self.pauses.append(
            Pause(call.position, call.node.name, pause.payload, "during", pause.index)
        )

    def failed(self, call: Call, exc: Exception) -> None:
        """Note that ``call`` raised ``exc`` (raised as ``NodeError`` by ``close``)."""
        if self.failure is None:
            if call.node.child is not None and isinstance(exc, CorralError):
                self.failure = exc  # a subgraph's child already said what failed, by path
                return
            error = node_error(call.node.name, call.step, exc)
            error.__cause__ = exc
            self.failure = error

    def keep_finished(self, error: CorralError) -> None:
        """Record that the superstep failed with ``error``, keeping its finished siblings;
        the caller raises the error. A resumed run runs the tasks that did not finish."""
        results = self._with_done()
        writer = self.rs.checkpoints
        if writer is None:
            return
        try:
            writer.save_partial(self.rs, results, self.pauses, "error", error=error)
        except ConcurrentRunError:
            pass  # another run wrote the thread since: its checkpoints say how it stands

    def _with_done(self) -> list[TaskResult]:
        done = self.rs.done
        if not done:
            return self.results
        merged = [*done.values(), *self.results]
        merged.sort(key=_result_position)
        return merged

    def close(self) -> Routing | None:
        """Close the barrier: raise a cap hit, pause, or merge and return the routing.

        Returns ``None`` when a task paused: the run stops here until it is resumed.
        """
        rs = self.rs
        error = self.failure or self.cap_error
        if error is not None:
            self.keep_finished(error)
            raise error
        results = self._with_done() if rs.done else self.results
        if self.pauses:
            assert rs.checkpoints is not None  # interrupt() raises without one
            rs.checkpoints.save_partial(rs, results, self.pauses, "interrupted")
            rs.pause(self.pauses)
            return None
        try:
            writes = merge(rs, results, self.number)
        except CorralError as failure:
            self.keep_finished(failure)
            raise
        return Routing(rs, results, writes)


def merge(rs: RunState, results: list[TaskResult], number: int) -> list[tuple[str, dict[str, Any]]]:
    """Merge the updates of superstep ``number`` at its barrier, in task order; note the
    joins that ran and the nodes that arrived at theirs; return the writes merged."""
    tables = rs.tables
    if tables.has_subgraphs:
        writes = expand(results)
    else:
        writes = [(node.name, update) for _, node, update, _ in results if update]
    if rs.log is not None:
        rs.log.extend(writes)
    if writes:
        merged = merged_by_child(rs.values, results) if tables.has_subgraphs else None
        rs.values = merged or apply_writes(
            rs.values, writes, tables.reducers, tables.empties, superstep=number, notes=rs.notes
        )
        rs.flat = is_flat(rs.values)
    rs.supersteps = number
    if tables.has_joins:
        note_joins(rs, results)
    return writes


def _result_position(result: TaskResult) -> int:
    return result.position


def note_joins(rs: RunState, results: list[TaskResult]) -> None:
    """Note that the joins among ``results`` ran and that the others arrived at their joins."""
    arrived = rs.arrived
    for _, node, _, _ in results:
        if node.wait_for:
            arrived[node.name] = set()
    for _, node, _, _ in results:
        for join in node.joins:
            waited = arrived.get(join)
            if waited is None:
                arrived[join] = {node.name}
            else:
                waited.add(node.name)


# --------------------------------------------------------------------------- run ends


def running(rs: RunState) -> bool:
    """Return whether the run has a superstep (or a routing) left to do."""
    return rs.status == "running" and bool(rs.tasks or rs.reroute)


def end_run(rs: RunState) -> None:
    """End a run that has nothing left to run (or paused), or raise for a stuck join."""
    if rs.status == "running":
        writer = rs.checkpoints
        if rs.held:
            stuck = stuck_join(rs)
            if writer is not None and writer.last_status != "error":
                writer.save_superstep(rs, [], [], stuck)
            raise stuck
        if writer is not None and writer.last_status not in ("", "done"):
            # Resumed from a pause with nothing left to run: record that the run is over.
            writer.save_superstep(rs, [], [])
        rs.status = "done"
    if rs.emit is not None:
        rs.emit(RunEnd(rs.status, rs.steps, rs.supersteps))
