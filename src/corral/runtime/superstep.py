"""The superstep core: every rule of a run, with no I/O of its own.

A run is a sequence of supersteps. In each one the active tasks (a node, or a node with a
``Send`` argument) all read the same state; their updates are merged at the barrier in task
order (node registration order, ``Send`` runs in the order sent); then the routes of the
tasks that ran are taken on the merged state, giving the next tasks (plain targets
de-duplicated, every ``Send`` its own task). A join (``wait_for``) is held until every node
it waits for has finished a run since the join's own last run (a listed node counts by
running, whether or not it routes to the join; one that runs beside the join counts toward
its next run); a run that would end while a join still waits raises
:class:`~corral.errors.StuckJoinError`.

Bounds are checked before each node run (:func:`cap_error`): the run's step count against
``max_steps`` and the node's run count against ``max_runs``; a guarded route is counted when
taken and, once used up, redirected to its guard's ``otherwise`` target (or the run stops
with ``GuardExhaustedError``). A node run counts when it completes, so one cut short by
``interrupt()`` counts once, when it finally completes.

This module decides; it never calls a node or a router and never awaits (the shape of
``graphlib.TopologicalSorter``: the caller owns the loop; :class:`Core` says how a driver,
:mod:`corral.runtime.drivers`, drives it). Checkpoints are written through
``RunState.checkpoints`` and events through ``RunState.emit`` at the points decided here.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from corral.control import Send
from corral.cost import NOTHING
from corral.errors import (
    ConcurrentRunError,
    CorralError,
    CostExceededError,
    NodeCapError,
    NodeError,
    RunLimitError,
    StepLimitError,
    StuckJoinError,
)
from corral.runtime.events import NodeEnd, NodeStart, RouteTaken, RunEnd, SuperstepEnd
from corral.runtime.interrupts import UnansweredInterrupt
from corral.runtime.routing import chosen_targets, guard_exhausted, outcome, pauses_before
from corral.runtime.run_state import Call, Pause, Result, RunState, Targets, Task
from corral.runtime.state import apply_writes
from corral.runtime.subgraphs import ChildPause, ChildWrites, accept_child, number_entries
from corral.runtime.tables import NO_ARG, Node

__all__ = ["Core", "end_run", "node_error"]


def cap_error(rs: RunState, node: Node, steps: int, planned: list[Call]) -> CorralError | None:
    """Return the error a run of ``node`` would hit now, or ``None`` if it may run.

    ``planned``: the calls planned before it in this superstep (they count against its
    ``max_runs`` and may spend from the budget too). A subgraph entry is not a node run:
    ``max_steps`` is checked inside it, before each of its child's node runs, against the
    child's own cap and what the top-level run's step pool has left.
    """
    if node.child is None:
        error = _step_limit(rs, node, steps)
        if error is not None:
            return error
    runs = rs.runs.get(node.name, 0) + sum(task.node is node for _, task, _ in planned)
    if node.max_runs is not None and runs >= node.max_runs:
        msg = (
            f"node {node.path!r} already ran {runs} times (max_runs={node.max_runs}); "
            f"raise its max_runs or guard the route that leads back to it"
        )
        return NodeCapError(msg, node=node.path, max_runs=node.max_runs, state=rs.values)
    if rs.purse.budget is None:
        return None
    spends = sum((t.node.cost for _, t, _ in planned if t.node.cost is not None), NOTHING)
    return rs.purse.refuse(node.path, node.cost, spends, rs.values)


def _step_limit(rs: RunState, node: Node, steps: int) -> StepLimitError | None:
    """Return the error of a run of ``node`` past ``max_steps`` (``steps``: the run's so
    far), or ``None``; in a subgraph's child run, its own cap first, then the top level's.
    Either stops the whole run (which gives the error its state: :meth:`Core.failed`)."""
    cap, path = rs.max_steps, node.path
    if rs.entry and steps >= cap:
        graph = rs.tables.prefix[:-1]
        msg = (
            f"subgraph {graph!r} stopped after {steps} steps (its max_steps={cap}) before "
            f"running {path!r}; raise the child graph's max_steps or add a guard"
        )
        return StepLimitError(msg, steps=steps, max_steps=cap, node=path, state=rs.values)
    if rs.entry:
        assert rs.step_pool is not None
        steps, cap = rs.step_pool.taken, rs.step_pool.max_steps
    if steps < cap:
        return None
    msg = (
        f"stopped after {steps} steps (max_steps={cap}) before running {path!r}; "
        f"raise max_steps or add a guard"
    )
    return StepLimitError(msg, steps=steps, max_steps=cap, node=path, state=rs.values)


def node_error(
    node: str, step: int, exc: BaseException, tries: int = 1, router: str | None = None
) -> NodeError:
    """Return the error that reports ``exc`` raised by a node run on its last attempt,
    attempt ``tries`` (or by the node's ``router``)."""
    who = f"node {node!r}" if router is None else f"router {router!r} of node {node!r}"
    after = f" on attempt {tries} of {tries}" if tries > 1 else ""
    msg = (
        f"{who} raised {type(exc).__name__}: {exc} (step {step}{after}); fix it, or "
        f"catch the error inside it and return an update that records it"
    )
    return NodeError(msg, node=node, step=step, attempts=tries)


class Core:
    """The core of one run: each of its supersteps, from the calls it may make to the tasks
    of the next one.

    :meth:`plan` plans a superstep: ``calls`` are the tasks that may run now, in task order,
    each with its step number; ``cap_error`` is the first bound that refused a task. A driver
    runs them and hands back each outcome (:meth:`finished`, :meth:`paused`,
    :meth:`failed`), then :meth:`close` merges the results at the barrier (a
    failure, else a cap hit, is raised there, after the finished siblings were saved). The
    driver then calls :meth:`take` once per result, in order, calling the node's router
    first when it has one (so a router that reads ``ctx.guards`` sees the routes its earlier
    siblings took), and :meth:`finish`.

    Outcomes handed back before any :meth:`plan` are of no planned call and no bound is
    checked: ``update_state(as_node=...)`` hands back a person's edit, which no cap refuses.
    """

    def __init__(self, rs: RunState) -> None:
        self.rs = rs
        self.calls: list[Call] = []
        self.cap_error: CorralError | None = None
        """The bound a call after ``calls`` would hit."""
        self.failure: CorralError | None = None
        """The first node failure or invalid return value of this superstep."""
        self.results: list[Result] = []
        """The tasks of this superstep that finished; to start with, those a resumed run
        routes first (their updates were merged, then their routes failed)."""
        self.pauses: list[Pause] = []
        self.next: list[Task] = []
        """The next superstep's tasks: each node's run on the state once (its ``task``),
        each ``Send`` a run of its own."""
        self.writes: list[tuple[str, dict[str, Any]]] = []
        """The writes merged at the barrier, in task order."""
        self.guards_before: dict[tuple[str, str], int] | None = None
        """The guard counts before the routes were taken (restored when a route fails)."""
        self.record = False
        """Whether each finished task is recorded at once: with several tasks, a crash in the
        superstep then re-runs only the tasks that had not finished."""
        if rs.status == "running" and rs.reroute:
            self.results, rs.reroute = rs.reroute, None
            self.guards_before = dict(rs.guards) if rs.checkpoints is not None else None

    def plan(self) -> bool:
        """Plan the next superstep: the tasks not finished earlier that no bound refuses,
        each with its step number (``cap_error``: the first bound hit). Return ``False``
        when the run has none left to do (it ended or paused)."""
        rs = self.rs
        if rs.status != "running" or not rs.tasks:
            return False
        self.results, self.next = [], []  # failure, cap_error and pauses each end the run
        calls: list[Call] = []
        self.calls = calls
        self.record = rs.checkpoints is not None and len(rs.tasks) > 1
        steps = rs.steps
        pool = rs.step_pool if rs.entry else None  # a child's runs take run-wide numbers
        for index, task in enumerate(rs.tasks):
            if index in rs.done:
                continue
            node = task.node
            if (
                steps >= rs.max_steps
                or (pool is not None and pool.taken >= pool.max_steps)
                or node.max_runs is not None
                or rs.purse.budget is not None
            ):
                error = cap_error(rs, node, steps, calls)
                if error is not None:
                    # a bound refuses this node alone: its siblings still run
                    self.cap_error = self.cap_error or error
                    continue
            number = steps
            if node.child is None:
                steps += 1
                number = steps if pool is None else pool.take()
            calls.append((index, task, number))
        if rs.tables.has_subgraphs:
            number_entries(rs, calls, steps if pool is None else pool.taken)
        return True

    # ------------------------------------------------------------------ outcomes

    def started(self, call: Call) -> None:
        """Note that ``call`` is about to run."""
        emit = self.rs.emit
        if emit is not None:
            rs, (_, task, step) = self.rs, call
            node = task.node
            entry = rs.entry if node.child is None else (*rs.entry, step)
            emit(NodeStart(step, node.path, rs.supersteps + 1, task.arg is not NO_ARG, entry))

    def record_early(self, call: Call, out: Any) -> Result | None:
        """Record at once that ``call`` finished with ``out`` (before its siblings did);
        return the result recorded, for :meth:`finished`."""
        _, task, _ = call
        if not self.record or task.node.child is not None:
            return None
        try:
            result = outcome(self.rs, call, out)
        except CorralError:
            return None  # reported in task order by finished()
        assert self.rs.checkpoints is not None
        self.rs.checkpoints.save_task(self.rs, result)
        return result

    def finished(self, call: Call, out: Any, seconds: float, done: Result | None = None) -> bool:
        """Check what ``call`` returned after ``seconds`` (timed when the run is watched),
        count the run and trace it; return ``False`` if it was invalid (``close`` raises).
        ``done``: its result, already recorded by :meth:`record_early`."""
        rs = self.rs
        position, task, step = call
        node = task.node
        if type(out) is ChildWrites:
            accept_child(rs, node, out)
            self.results.append((position, node, out, None, step))
            return True
        try:
            result = done or outcome(rs, call, out)
        except CorralError as error:
            self.failure = self.failure or error  # the first failure is the superstep's
            return False
        self.results.append(result)
        _, _, update, _, _ = result
        rs.steps += 1
        name = node.name
        rs.runs[name] = rs.runs.get(name, 0) + 1
        attempt = rs.retried.pop(position, 1) if rs.retried else 1
        rs.trace.append((step, node.path, update, seconds, attempt, None))
        if rs.emit is not None:
            spent = rs.purse.runs.pop((name, step), NOTHING)
            rs.emit(NodeEnd(step, node.path, update, seconds, spent))
        if self.record and done is None:
            assert rs.checkpoints is not None
            rs.checkpoints.save_task(rs, result)
        return True

    def paused(self, call: Call, pause: UnansweredInterrupt) -> None:
        """Note that ``call`` stopped at an unanswered ``interrupt()``."""
        position, task, _ = call
        if isinstance(pause, ChildPause):  # inside a subgraph: each named by its path
            pause.count(self.rs)
            self.pauses.extend(pause.pauses(position))
            return
        self.pauses.append(Pause(position, task.node.name, pause.payload, "during", pause.index))

    def failed(self, call: Call, exc: Exception) -> None:
        """Note that ``call`` raised ``exc`` (raised as ``NodeError`` by ``close``)."""
        position, task, step = call
        tries = self.rs.retried.pop(position, 1)
        if self.failure is None:
            if isinstance(exc, CostExceededError) or (
                task.node.child is not None and isinstance(exc, CorralError)
            ):
                if isinstance(exc, RunLimitError | StuckJoinError):
                    # it stops the whole run: each run it passes gives it its state, so
                    # it ends up with the top-level run's, whatever depth it came from
                    exc.state = dict(self.rs.values)
                self.failure = exc  # says what failed (a subgraph's child: by path)
                return
            error = node_error(task.node.path, step, exc, tries)
            error.__cause__ = exc
            self.failure = error

    def keep_finished(self, error: CorralError) -> None:
        """Record that the superstep failed with ``error``, keeping its finished siblings;
        the caller raises the error. A resumed run runs the tasks that did not finish."""
        writer = self.rs.checkpoints
        if writer is None:
            return
        try:
            writer.save(self.rs, [], self.pauses, "error", done=self._with_done(), error=error)
        except ConcurrentRunError:
            pass  # another run wrote the thread since: its checkpoints say how it stands

    def _with_done(self) -> list[Result]:
        """Return the superstep's finished tasks, an earlier attempt's too, in task order."""
        return sorted([*self.rs.done.values(), *self.results], key=itemgetter(0))

    # ------------------------------------------------------------------ the barrier

    def close(self) -> bool:
        """Close the barrier: raise a failure or cap hit, pause, or merge the results.

        Returns whether the routes of the results are to be taken: ``False`` when a task
        paused (the run stops here until it is resumed).
        """
        rs = self.rs
        error = self.failure or self.cap_error
        if error is not None:
            self.keep_finished(error)
            raise error
        results = self._with_done() if rs.done else self.results
        if self.pauses:
            assert rs.checkpoints is not None  # interrupt() raises without one
            rs.checkpoints.save(rs, [], self.pauses, "interrupted", done=results)
            rs.pause(self.pauses)
            return False
        # Merge the updates in task order, then note who ran at the joins.
        self.writes = writes = []
        for _, node, update, _, _ in results:  # a subgraph entry's writes in its place
            if type(update) is ChildWrites:
                writes.extend(update.pairs)
            elif update:
                writes.append((node.name, update))
        if rs.log is not None:
            rs.log.extend(writes)
        tables = rs.tables
        if writes:
            number = rs.supersteps + 1  # the superstep being merged, named in a write conflict
            try:
                rs.values = apply_writes(
                    rs.values, writes, tables.reducers, tables.empties, number, tables.prefix
                )
            except CorralError as failure:
                self.keep_finished(failure)
                raise
        rs.supersteps += 1
        if tables.has_joins:
            _note_runs_at_joins(rs, results)
        self.results = results
        if rs.checkpoints is not None:
            self.guards_before = dict(rs.guards)
        return True

    # ------------------------------------------------------------------ routes

    def take(self, result: Result, raw: Any = None) -> None:
        """Take the routes of ``result`` (``raw``: its router's return value, if it has one)."""
        _, node, _, goto, _ = result
        rs = self.rs
        routes = node.routes
        targets: Targets
        if node.then is not None:
            targets = node.then
        elif node.router is None:
            targets = goto or ()  # a Command node without goto ends here
        elif type(raw) is str and raw in routes:  # one of the router's routes
            targets = (raw,)
        else:
            targets = chosen_targets(node, node.router, raw, rs.tables.node_names)
        guards = rs.guards
        for item in targets:
            if isinstance(item, Send):
                route, arg = routes[item.node], item.arg
            else:
                route, arg = routes[item], NO_ARG
            guard = route.guard
            if guard is not None:  # counted when taken; used up: its otherwise
                count = guards[route.key]  # a run keeps every guard's count from its start
                if count < guard.max:
                    guards[route.key] = count = count + 1
                elif route.otherwise is not None:
                    route, arg = route.otherwise, NO_ARG
                else:
                    raise guard_exhausted(rs, node, route.target, guard)
            if rs.emit is not None:
                counted = None if guard is None else (count, guard.max)
                kind = route.via if arg is NO_ARG else "send"
                path = rs.tables.prefix + route.target
                rs.emit(RouteTaken(node.path, path, kind, counted, rs.entry))  # type: ignore[arg-type]
            target = route.node
            if target is None:  # the run's end
                continue
            if arg is not NO_ARG:
                self.next.append(Task(target, arg))
            elif target.wait_for:
                if target.name not in rs.held:
                    rs.held.append(target.name)
            elif target.task not in self.next:
                self.next.append(target.task)

    def routes_failed(self, error: BaseException) -> None:
        """Save the merged superstep with its routes still to take: ``error``, a router
        failed or a route could not be taken (the run failed), or the run was stopped while a
        router ran (Ctrl-C, a consumer that left its stream: the thread goes on from here)."""
        rs = self.rs
        if rs.checkpoints is None or self.guards_before is None:
            return
        rs.guards = self.guards_before
        failed = error if isinstance(error, CorralError) else None
        status = "error" if failed else "running"
        rs.checkpoints.save(rs, self.writes, [], status, reroute=self.results, error=failed)

    def finish(self) -> None:
        """Set the next superstep's tasks, write the checkpoint and pause if one is due."""
        rs = self.rs
        if rs.held:
            _release_joins(rs, self.next)
        tasks = self.next
        if len(tasks) > 1:
            tasks.sort(key=_merge_order)
        pauses: list[Pause] = []
        if rs.pause_after:
            pauses = [
                Pause(position, node.name, None, "after")
                for position, node, _, _, _ in self.results
                if node.name in rs.pause_after
            ]
        if rs.pause_before:
            pauses.extend(pauses_before(rs, tasks))
        rs.tasks, rs.done, rs.answers = tasks, {}, {}  # the next superstep starts afresh
        if rs.emit is not None:
            rs.emit(SuperstepEnd(rs.supersteps, rs.steps, tuple(t.node.name for t in tasks)))
        if rs.checkpoints is not None:
            # A join still held when nothing else is left to run never runs: the run ends
            # with StuckJoinError (CR304), and the checkpoint says so.
            stuck = stuck_join(rs) if rs.held and not tasks else None
            rs.checkpoints.save(rs, self.writes, pauses, error=stuck)
        if pauses:
            rs.pause(pauses)


def _merge_order(task: Task) -> tuple[int, bool]:
    """Return the merge order of a task: its node's registration index; a node's run on the
    state before its ``Send`` runs, which keep the order they were sent in."""
    return task.node.order, task.arg is not NO_ARG


# --------------------------------------------------------------------------- joins


def _note_runs_at_joins(rs: RunState, results: list[Result]) -> None:
    """Note the runs of a merged superstep at the joins: a join that ran starts counting
    again; every other listed node that ran counts toward its joins' next run, whether or
    not it routed there (a node beside its join counts toward the join's next run)."""
    arrived = rs.arrived
    for _, node, _, _, _ in results:
        if node.wait_for:
            arrived[node.name] = set()
    for _, node, _, _, _ in results:
        for join in node.joins:
            arrived.setdefault(join, set()).add(node.name)


def _release_joins(rs: RunState, tasks: list[Task]) -> None:
    """Add to ``tasks`` the joins a route reached whose listed nodes have all run."""
    nodes = rs.tables.nodes
    still: list[str] = []
    for name in rs.held:
        join = nodes[name]
        if join.wait_for <= rs.arrived.get(name, set()):
            if join.task not in tasks:
                tasks.append(join.task)
            if rs.emit is not None:
                rs.emit(RouteTaken(join.path, join.path, "join", None, rs.entry))
        else:
            still.append(name)
    rs.held = still


def stuck_join(rs: RunState) -> StuckJoinError:
    """Return the error of a run that would end while a ``wait_for`` join still waits."""
    name, prefix = rs.held[0], rs.tables.prefix
    join = rs.tables.nodes[name]
    arrived = rs.arrived.get(name, set())
    missing = [prefix + node for node in sorted(join.wait_for - arrived)]
    wait_for = [prefix + node for node in sorted(join.wait_for)]
    msg = (
        f"the run would end while join {join.path!r} still waits for {missing} "
        f"(wait_for={wait_for}); route to those nodes before the run ends, or "
        f"drop them from its wait_for (CR304)"
    )
    return StuckJoinError(
        msg, join=join.path, waiting_for=missing, wait_for=wait_for, state=rs.values
    )


# --------------------------------------------------------------------------- run ends


def end_run(rs: RunState) -> None:
    """End a run that has nothing left to run (or paused), or raise for a stuck join."""
    if rs.status == "running":
        writer = rs.checkpoints
        if rs.held:
            stuck = stuck_join(rs)
            if writer is not None and writer.last_status != "error":
                writer.save(rs, [], [], error=stuck)
            raise stuck
        if writer is not None and writer.last_status not in ("", "done"):
            # Resumed from a pause with nothing left to run: record that the run is over.
            writer.save(rs, [], [])
        rs.status = "done"
    if rs.emit is not None:
        rs.emit(RunEnd(rs.status, rs.steps, rs.supersteps, rs.purse.spent))
