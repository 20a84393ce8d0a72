"""The superstep loop.

A run is a sequence of supersteps. In each one the active tasks (a node, or a node with a
``Send`` argument) all read the same state; their updates are merged at the barrier in task
order (node registration order, ``Send`` runs in the order sent); then the routes of the
tasks that ran are evaluated on the merged state, giving the next tasks (plain targets
de-duplicated, every ``Send`` its own task). A join (``wait_for``) is held until every node
it waits for has finished a run since the join's own last run.

Bounds are checked before each node run: the run's step count against ``max_steps`` and the
node's run count against ``max_runs``; a guarded route is counted when taken and, once used
up, redirected to its guard's ``otherwise`` target (or the run stops with
``GuardExhaustedError``). A node run counts when it completes, so one cut short by
``interrupt()`` counts once, when it finally completes.

The loop exists twice, as a generator (``run_sync``) and an async generator (``run_async``,
which runs the async nodes of a superstep concurrently); everything else is shared. Both
yield the events buffered in :class:`Execution` at each point where a caller may look.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from time import perf_counter
from typing import Any

from corral.checkpoint.base import Checkpointer
from corral.control import Command, Send
from corral.errors import (
    CorralError,
    GuardExhaustedError,
    InvalidUpdateError,
    NodeCapError,
    NodeError,
    RouteError,
    StepLimitError,
)
from corral.reducers import Overwrite
from corral.runtime.context import Context
from corral.runtime.events import (
    Event,
    Interrupt,
    NodeEnd,
    NodeStart,
    Paused,
    RouteTaken,
    RunEnd,
    SuperstepEnd,
)
from corral.runtime.interrupts import (
    InterruptWithoutCheckpointerError,
    _Answers,
    _current,
    _Pause,
)
from corral.runtime.state import IMMUTABLE, FlatView, StateView, apply_writes, is_flat, view_of
from corral.runtime.tables import NO_ARG, Node, Router, Tables
from corral.spec import END

__all__ = ["NO_ARG", "Execution", "Result", "Task", "run_async", "run_sync"]


Task = tuple[Node, Any]
"""A node to run and its ``Send`` argument (``NO_ARG`` for a plain run)."""
Result = tuple[int, Node, "dict[str, Any] | None", "tuple[str | Send[str], ...] | None"]
"""A finished task: its index in the superstep, node, update and ``Command`` targets."""


class Execution:
    """Everything one run carries between supersteps (and saves in a checkpoint)."""

    __slots__ = (
        "answers",
        "arrived",
        "buffer",
        "checkpoint_id",
        "deps",
        "done",
        "emit",
        "flat",
        "guards",
        "held",
        "interrupts",
        "max_steps",
        "reroute",
        "runs",
        "saver",
        "status",
        "steps",
        "supersteps",
        "tables",
        "tasks",
        "thread_id",
        "trace",
        "values",
    )

    def __init__(self, tables: Tables, *, max_steps: int, deps: Any, thread_id: str | None) -> None:
        self.tables = tables
        self.max_steps = max_steps
        self.deps = deps
        self.thread_id = thread_id
        self.values: dict[str, Any] = {}
        self.flat = False
        """True when every value of ``values`` is immutable (nodes then get a FlatView)."""
        self.tasks: list[Task] = []
        self.done: dict[int, Result] = {}
        """Tasks of the current superstep that finished in an earlier, interrupted attempt."""
        self.answers: dict[int, list[Any]] = {}
        """Answers to ``interrupt()`` calls, per task index of the current superstep."""
        self.reroute: list[Result] | None = None
        """Tasks whose routes failed after their updates were merged: route them first."""
        self.steps = 0
        self.supersteps = 0
        self.runs: dict[str, int] = {}
        self.guards: dict[tuple[str, str], int] = dict.fromkeys(tables.guard_keys, 0)
        self.arrived: dict[str, set[str]] = {}
        self.held: list[str] = []
        self.status = "running"
        self.interrupts: list[Interrupt] = []
        self.trace: list[tuple[int, str, dict[str, Any] | None, float]] = []
        self.emit: Callable[[Event], None] | None = None
        self.buffer: list[Event] | None = None
        self.saver: Saving | None = None
        self.checkpoint_id: str | None = None


class Saving:
    """The persistence hooks the engine calls (implemented in ``corral.runtime.persist``)."""

    checkpointer: Checkpointer
    last_status: str = ""
    """The status of the last checkpoint written."""
    records_tasks: bool = False
    """Whether :meth:`save_task` records finished tasks (the checkpointer has ``put_writes``)."""

    def save_task(self, ex: Execution, result: Result) -> None:
        """Record durably that one task of a superstep with several tasks has finished."""
        raise NotImplementedError

    def save_superstep(
        self,
        ex: Execution,
        writes: list[tuple[str, dict[str, Any]]],
        pauses: list[dict[str, Any]],
    ) -> None:
        """Write the checkpoint of a finished superstep."""
        raise NotImplementedError

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
        raise NotImplementedError

    def interrupt_id(self, ex: Execution, task: int, index: int, node: str) -> str:
        """Return a stable id for an interrupt."""
        raise NotImplementedError


# --------------------------------------------------------------------------- planning


def _plan(ex: Execution) -> tuple[list[int], CorralError | None]:
    """Return the task indexes that may run now, and the cap error hit after them, if any."""
    tasks = ex.tasks
    done = ex.done
    if len(tasks) == 1 and not done:
        node = tasks[0][0]
        error = _cap_error(ex, node, ex.steps, ex.runs.get(node.name, 0))
        return ([], error) if error is not None else ([0], None)
    steps = ex.steps
    planned: dict[str, int] = {}
    allowed: list[int] = []
    for index, (node, _) in enumerate(tasks):
        if index in done:
            continue
        runs = ex.runs.get(node.name, 0) + planned.get(node.name, 0)
        error = _cap_error(ex, node, steps, runs)
        if error is not None:
            return allowed, error
        steps += 1
        planned[node.name] = planned.get(node.name, 0) + 1
        allowed.append(index)
    return allowed, None


def _cap_error(ex: Execution, node: Node, steps: int, runs: int) -> CorralError | None:
    if steps >= ex.max_steps:
        msg = (
            f"stopped after {steps} steps (max_steps={ex.max_steps}) before running "
            f"{node.name!r}; raise max_steps or add a guard"
        )
        return StepLimitError(
            msg, steps=steps, max_steps=ex.max_steps, node=node.name, state=ex.values
        )
    if node.max_runs is not None and runs >= node.max_runs:
        msg = (
            f"node {node.name!r} already ran {runs} times (max_runs={node.max_runs}); "
            f"raise its max_runs or guard the route that leads back to it"
        )
        return NodeCapError(msg, node=node.name, max_runs=node.max_runs, state=ex.values)
    return None


# --------------------------------------------------------------------------- node runs


def _context(ex: Execution, node: str, step: int) -> Context[Any]:
    return Context(
        deps=ex.deps,
        node=node,
        step=step,
        thread_id=ex.thread_id,
        runs=ex.runs,
        guards=ex.guards,
    )


def _node_error(
    ex: Execution, node: str, step: int, exc: BaseException, router: str = ""
) -> NodeError:
    what = f"router {router!r} of node {node!r}" if router else f"node {node!r}"
    msg = (
        f"{what} raised {type(exc).__name__}: {exc} (step {step}); fix it, or catch the "
        f"error inside it and return an update that records it"
    )
    return NodeError(msg, node=node, step=step)


def _accept(ex: Execution, index: int, node: Node, out: Any, step: int, seconds: float) -> Result:
    """Check a node's return value, count the run, trace it and return its result."""
    update: dict[str, Any] | None
    goto: tuple[str | Send[str], ...] | None
    if type(out) is dict and ex.tables.keyset.issuperset(out):
        update, goto = out, None  # the common case, without a call
    else:
        update, goto = _outcome(ex.tables, node, out)
    ex.steps += 1
    name = node.name
    ex.runs[name] = ex.runs.get(name, 0) + 1
    ex.trace.append((step, name, update, seconds))
    if ex.emit is not None:
        ex.emit(NodeEnd(step, name, update, seconds))
    return (index, node, update, goto)


def _outcome(
    tables: Tables, node: Node, out: Any
) -> tuple[dict[str, Any] | None, tuple[str | Send[str], ...] | None]:
    """Return the update and ``Command`` targets of a node's return value, or raise."""
    goto: tuple[str | Send[str], ...] | None = None
    if out is None:
        update = None
    elif type(out) is dict:
        update = out
    elif isinstance(out, Command):
        update = dict(out.update) if out.update is not None else None
        if out.goto is not None:
            goto = _command_targets(node, out.goto)
    elif isinstance(out, dict):
        update = dict(out)
    else:
        msg = (
            f"node {node.name!r} returned {type(out).__name__} {_short(out)}; return a dict "
            f"of the keys it changes, None for no change, or a Command"
        )
        raise InvalidUpdateError(msg, node=node.name)
    if update is not None and not tables.keyset.issuperset(update):
        bad = next(k for k in update if k not in tables.keyset)
        msg = (
            f"node {node.name!r} wrote key {bad!r}, which is not in the state schema "
            f"(keys: {sorted(tables.keyset)}); add it to the schema or fix the key"
        )
        raise InvalidUpdateError(msg, node=node.name, key=bad if isinstance(bad, str) else None)
    return update, goto


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _command_targets(node: Node, goto: Any) -> tuple[str | Send[str], ...]:
    allowed = node.command or ()
    items: tuple[Any, ...]
    if isinstance(goto, (str, Send)):
        items = (goto,)
    elif isinstance(goto, (list, tuple)):
        items = tuple(goto)
    else:
        items = (goto,)
    for item in items:
        target = item.node if isinstance(item, Send) else item
        if not isinstance(target, str) or target not in allowed:
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


def _call_sync(
    ex: Execution, node: Node, arg: Any, values: dict[str, Any], step: int, answers: _Answers | None
) -> Any:
    state = view_of(values, ex.flat) if arg is NO_ARG else arg
    token = _current.set(answers) if answers is not None else None
    try:
        if node.takes_ctx:
            return node.func(state, _context(ex, node.name, step))
        return node.func(state)
    finally:
        if token is not None:
            _current.reset(token)


# --------------------------------------------------------------------------- routing


def router_targets(node: Node, router: Router, raw: Any) -> tuple[str | Send[str], ...]:
    allowed = router.allowed
    if type(raw) is str:
        if raw in allowed:
            return (raw,)
    elif isinstance(raw, Send):
        if raw.node in allowed:
            return (raw,)
    elif isinstance(raw, (list, tuple)) and router.many:
        if all(
            (item.node if isinstance(item, Send) else item) in allowed
            and isinstance(item, (str, Send))
            for item in raw
        ):
            return tuple(raw)
    if isinstance(raw, (list, tuple)) and not router.many:
        why = "a list, but its annotation allows one target; annotate it list[Literal[...]]"
    else:
        why = f"not one of its routes {list(allowed)}"
    msg = (
        f"router {router.name!r} (after node {node.name!r}) returned {raw!r}, which is "
        f"{why}; return one of them or add it to its return annotation"
    )
    raise RouteError(msg, router=router.name, value=raw, allowed=allowed)


def take_routes(
    ex: Execution,
    node: Node,
    targets: tuple[Any, ...],
    via: str,
    plain: list[Node],
    sends: list[Task],
) -> None:
    """Count the guards of ``targets`` and add the tasks they lead to."""
    nodes = ex.tables.nodes
    emit = ex.emit
    for item in targets:
        if type(item) is str:
            name: str = item
            arg = NO_ARG
            kind = via
        else:
            name = item.node
            arg = item.arg
            kind = "send"
        guarded = node.guards.get(name)
        counted: tuple[int, int] | None = None
        if guarded is not None:
            key, guard = guarded
            count = ex.guards.get(key, 0)
            if count < guard.max:
                ex.guards[key] = count + 1
                counted = (count + 1, guard.max)
            elif guard.otherwise is not None:
                counted = (count, guard.max)
                name = guard.otherwise
                arg = NO_ARG
                kind = "otherwise"
            else:
                msg = (
                    f"route {node.name!r} → {name!r} was already taken {guard.max} times "
                    f"(Guard max={guard.max}) and its guard has no otherwise target; raise "
                    f"max or give it one: Guard({name!r}, max={guard.max}, otherwise=END)"
                )
                raise GuardExhaustedError(
                    msg, source=node.name, target=name, max=guard.max, state=ex.values
                )
        if emit is not None:
            emit(RouteTaken(node.name, name, kind, counted))  # type: ignore[arg-type]
        if name == END:
            continue
        target = nodes[name]
        if arg is not NO_ARG:
            sends.append((target, arg))
        elif target.wait_for:
            if name not in ex.held:
                ex.held.append(name)
        elif target not in plain:
            plain.append(target)


def _note_joins(ex: Execution, results: list[Result]) -> None:
    for _, node, _, _ in results:
        if node.wait_for:
            ex.arrived[node.name] = set()
    for _, node, _, _ in results:
        for join in node.joins:
            ex.arrived.setdefault(join, set()).add(node.name)


def next_tasks(ex: Execution, plain: list[Node], sends: list[Task]) -> list[Task]:
    if ex.held:
        nodes = ex.tables.nodes
        still: list[str] = []
        for name in ex.held:
            join = nodes[name]
            if join.wait_for <= ex.arrived.get(name, set()):
                if join not in plain:
                    plain.append(join)
                if ex.emit is not None:
                    ex.emit(RouteTaken(name, name, "join"))
            else:
                still.append(name)
        ex.held = still
    tasks: list[Task] = [(n, NO_ARG) for n in plain]
    if sends:
        tasks.extend(sends)
    if len(tasks) > 1:
        tasks.sort(key=_order)
    return tasks


def _order(task: Task) -> int:
    return task[0].order


def _pauses_at_barrier(
    ex: Execution,
    results: list[Result],
    tasks: list[Task],
    before: frozenset[str],
    after: frozenset[str],
) -> list[dict[str, Any]]:
    pauses: list[dict[str, Any]] = []
    if after:
        for index, node, _, _ in results:
            if node.name in after:
                pauses.append({"task": index, "node": node.name, "value": None, "when": "after"})
    if before:
        seen: set[str] = set()
        for index, (node, _) in enumerate(tasks):
            if node.name in before and node.name not in seen:
                seen.add(node.name)
                pauses.append({"task": index, "node": node.name, "value": None, "when": "before"})
    return pauses


# --------------------------------------------------------------------------- the loops


class Loop:
    """The per-app settings the loops read."""

    def __init__(self, tables: Tables, before: frozenset[str], after: frozenset[str]) -> None:
        self.tables = tables
        self.before = before
        self.after = after


def _flush(ex: Execution) -> list[Event]:
    buffer = ex.buffer
    if not buffer:
        return []
    out = list(buffer)
    buffer.clear()
    return out


def _fail(ex: Execution, results: list[Result], pauses: list[dict[str, Any]]) -> None:
    """Keep the finished siblings of a failed superstep; the caller raises the error."""
    if ex.saver is not None and (results or pauses):
        ex.saver.save_partial(ex, results, pauses, "error")


def _merge(ex: Execution, results: list[Result]) -> list[tuple[str, dict[str, Any]]]:
    writes = [(node.name, update) for _, node, update, _ in results if update]
    if writes:
        tables = ex.tables
        ex.values = apply_writes(
            ex.values, writes, tables.reducers, tables.empties, superstep=ex.supersteps + 1
        )
        ex.flat = is_flat(ex.values)
    return writes


def _finish(
    ex: Execution,
    loop: Loop,
    results: list[Result],
    writes: list[tuple[str, dict[str, Any]]],
    plain: list[Node],
    sends: list[Task],
) -> None:
    tasks = next_tasks(ex, plain, sends)
    pauses = _pauses_at_barrier(ex, results, tasks, loop.before, loop.after)
    ex.tasks = tasks
    ex.done = {}
    ex.answers = {}
    if ex.emit is not None:
        ex.emit(SuperstepEnd(ex.supersteps, ex.steps, tuple(t[0].name for t in tasks)))
    if ex.saver is not None:
        ex.saver.save_superstep(ex, writes, pauses)
    if pauses:
        pause_run(ex, pauses)


def pause_run(ex: Execution, pauses: list[dict[str, Any]]) -> None:
    ex.status = "interrupted"
    ex.interrupts = [Interrupt(p["id"], p["node"], p["value"], p["when"]) for p in pauses]
    if ex.emit is not None:
        ex.emit(Paused(tuple(ex.interrupts)))


def _end(ex: Execution) -> None:
    if ex.status == "running":
        if ex.saver is not None and ex.saver.last_status not in ("", "done"):
            # Resumed from a pause with nothing left to run: record that the run is over.
            ex.saver.save_superstep(ex, [], [])
        ex.status = "done"
    if ex.emit is not None:
        ex.emit(RunEnd(ex.status, ex.steps, ex.supersteps))


def _pause_record(ex: Execution, index: int, node: Node, pause: _Pause) -> dict[str, Any]:
    return {
        "task": index,
        "node": node.name,
        "value": pause.payload,
        "when": "during",
        "index": pause.index,
    }


def _fast_steps(ex: Execution) -> None:
    """Run single-task supersteps of a run with no events and no checkpointer, inline.

    This is the hot path of a loop (one node at a time): the same steps as the general loop,
    with the checks and the merge of one update done here rather than through the helpers.
    It returns as soon as a superstep needs anything else (a fan-out, a ``Send``, a join, a
    cap about to be hit), and the general loop takes over from exactly that point. The step
    counts and the state live in locals; they go back to ``ex`` before any helper that reads
    them and on every exit (the ``finally``), errors included.
    """
    if ex.done or ex.reroute is not None or ex.held:
        return
    tables = ex.tables
    keyset = tables.keyset
    reducers = tables.reducers
    runs = ex.runs
    guards = ex.guards
    trace_append = ex.trace.append
    max_steps = ex.max_steps
    flat = ex.flat
    # A view nobody has read a mutable value from holds nothing anyone could have changed,
    # so the router and the next node (which read the same state) may share it.
    shared: FlatView | None = None
    immutable = IMMUTABLE
    clock = perf_counter
    no_arg = NO_ARG
    overwrite = Overwrite
    tasks = ex.tasks
    steps = ex.steps
    supersteps = ex.supersteps
    values = ex.values
    try:
        while len(tasks) == 1:
            node, arg = tasks[0]
            if arg is not no_arg or not node.simple:
                return
            step = steps + 1
            if step > max_steps:
                return
            name, func, then, router, route_func, route_ctx, allowed, fast = node.hot
            if shared is not None:
                state: FlatView = shared
            else:
                state = FlatView(values) if flat else StateView(values)
            start = clock()
            try:
                out = func(state)
            except InterruptWithoutCheckpointerError:
                raise
            except Exception as exc:
                raise _node_error(ex, name, step, exc) from exc
            seconds = clock() - start
            shared = state if flat or state._owned is None else None  # type: ignore[attr-defined]
            goto: tuple[Any, ...] | None = None
            if type(out) is dict and keyset.issuperset(out):
                update: dict[str, Any] | None = out
                steps = step
                runs[name] = runs.get(name, 0) + 1
                trace_append((step, name, out, seconds))
            else:
                ex.steps = steps
                _, _, update, goto = _accept(ex, 0, node, out, step, seconds)
                steps = ex.steps
            if update:
                new = dict(values)
                for key, value in update.items():
                    if type(value) is overwrite:
                        value = value.value
                    elif reducers[key] is not None:
                        new = apply_writes(
                            values, [(name, update)], reducers, tables.empties, superstep=step
                        )
                        flat = is_flat(new)
                        break
                    new[key] = value
                    if flat and type(value) not in immutable:
                        flat = False
                values = new
                shared = None
            supersteps += 1
            target: Any
            if then is not None:
                targets: tuple[Any, ...] = then
                via = "then"
            elif route_func is not None:
                if shared is not None:
                    state = shared
                else:
                    state = FlatView(values) if flat else StateView(values)
                try:
                    if route_ctx:
                        ex.steps, ex.supersteps = steps, supersteps
                        ex.values, ex.flat = values, flat
                        target = route_func(state, _context(ex, name, steps))
                    else:
                        target = route_func(state)
                except Exception as exc:
                    raise _node_error(ex, name, steps, exc, router.name) from exc
                shared = state if flat or state._owned is None else None  # type: ignore[attr-defined]
                if type(target) is str and target in allowed:
                    entry = fast.get(target)
                    if entry is not None:
                        following, route, most = entry
                        if route is None or guards[route] < most:
                            if route is not None:
                                guards[route] += 1
                            if following is None:
                                ex.tasks = []
                                return
                            tasks[0] = following
                            continue
                    targets = (target,)
                else:
                    targets = router_targets(node, router, target)
                via = "router"
            elif goto is not None:
                targets = goto
                via = "command"
            else:
                targets = ()
            if len(targets) == 1 and type(targets[0]) is str:
                entry = fast.get(targets[0])
                if entry is not None:
                    following, route, most = entry
                    if route is None or guards[route] < most:
                        if route is not None:
                            guards[route] += 1
                        if following is None:
                            ex.tasks = []
                            return
                        tasks[0] = following
                        continue
            ex.steps, ex.supersteps, ex.values, ex.flat = steps, supersteps, values, flat
            _route_slow(ex, node, targets, via)
            if ex.held:
                return
            tasks = ex.tasks
    finally:
        ex.steps, ex.supersteps, ex.values, ex.flat = steps, supersteps, values, flat


def _route_slow(ex: Execution, node: Node, targets: tuple[Any, ...], via: str) -> None:
    plain: list[Node] = []
    sends: list[Task] = []
    take_routes(ex, node, targets, via, plain, sends)
    ex.tasks = next_tasks(ex, plain, sends)


def run_sync(ex: Execution, loop: Loop) -> Iterator[Event]:
    """Run ``ex`` to its end or next pause, yielding buffered events as they happen."""
    yield from _flush(ex)
    emit = ex.emit
    checkpointing = ex.saver is not None
    fast = emit is None and not checkpointing
    while ex.status == "running" and (ex.tasks or ex.reroute):
        if fast:
            _fast_steps(ex)
            if not ex.tasks:
                break
        if ex.reroute is not None:
            results = ex.reroute
            ex.reroute = None
            writes: list[tuple[str, dict[str, Any]]] = []
        else:
            allowed, cap_error = _plan(ex)
            values = ex.values
            tasks = ex.tasks
            superstep = ex.supersteps + 1
            results = []
            pauses: list[dict[str, Any]] = []
            # With several tasks, each finished one is recorded at once, so a crash in the
            # superstep re-runs only the tasks that had not finished.
            recorder = ex.saver if len(tasks) > 1 and checkpointing else None
            if recorder is not None and not recorder.records_tasks:
                recorder = None
            for index in allowed:
                node, arg = tasks[index]
                step = ex.steps + 1
                if emit is not None:
                    emit(NodeStart(step, node.name, superstep, arg is not NO_ARG))
                    yield from _flush(ex)
                answers = _Answers(ex.answers.get(index, [])) if checkpointing else None
                start = perf_counter()
                try:
                    out = _call_sync(ex, node, arg, values, step, answers)
                except _Pause as pause:
                    pauses.append(_pause_record(ex, index, node, pause))
                    continue
                except InterruptWithoutCheckpointerError:
                    raise
                except Exception as exc:
                    error = _node_error(ex, node.name, step, exc)
                    _fail(ex, _with_done(ex, results), pauses)
                    raise error from exc
                try:
                    result = _accept(ex, index, node, out, step, perf_counter() - start)
                except CorralError as error:
                    _fail(ex, _with_done(ex, results), pauses)
                    raise
                results.append(result)
                if recorder is not None:
                    recorder.save_task(ex, result)
                if emit is not None:
                    yield from _flush(ex)
            if cap_error is not None:
                _fail(ex, _with_done(ex, results), pauses)
                raise cap_error
            merged = _barrier(ex, results, pauses, superstep)
            if merged is None:
                break
            results, writes = merged
        guards_before = dict(ex.guards) if checkpointing else None
        plain: list[Node] = []
        sends: list[Task] = []
        try:
            for result in results:
                node = result[1]
                router = node.router
                if node.then is not None:
                    take_routes(ex, node, node.then, "then", plain, sends)
                elif router is not None:
                    raw = route_sync(ex, node, router)
                    targets = router_targets(node, router, raw)
                    take_routes(ex, node, targets, "router", plain, sends)
                elif result[3] is not None:
                    take_routes(ex, node, result[3], "command", plain, sends)
        except CorralError as error:
            _reroute_failed(ex, results, writes, guards_before)
            raise error
        _finish(ex, loop, results, writes, plain, sends)
        yield from _flush(ex)
    _end(ex)
    yield from _flush(ex)


def _barrier(
    ex: Execution, results: list[Result], pauses: list[dict[str, Any]], superstep: int
) -> tuple[list[Result], list[tuple[str, dict[str, Any]]]] | None:
    """Close a superstep whose tasks all ran: pause it, or merge its updates.

    Return the superstep's results (with siblings finished before a pause or crash) and the
    writes merged into the state, or ``None`` when a task paused and the run stops here.
    """
    if ex.done:
        results = _with_done(ex, results)
    if pauses:
        _pause_partial(ex, results, pauses)
        return None
    try:
        writes = _merge(ex, results)
    except CorralError:
        _fail(ex, results, [])
        raise
    ex.supersteps = superstep
    if ex.tables.has_joins:
        _note_joins(ex, results)
    return results, writes


def _with_done(ex: Execution, results: list[Result]) -> list[Result]:
    if not ex.done:
        return results
    merged = list(ex.done.values()) + results
    merged.sort(key=_result_order)
    return merged


def _result_order(result: Result) -> int:
    return result[0]


def _pause_partial(ex: Execution, results: list[Result], pauses: list[dict[str, Any]]) -> None:
    assert ex.saver is not None  # interrupt() raises without one
    ex.saver.save_partial(ex, results, pauses, "interrupted")
    pause_run(ex, pauses)


def _reroute_failed(
    ex: Execution,
    results: list[Result],
    writes: list[tuple[str, dict[str, Any]]],
    guards_before: dict[tuple[str, str], int] | None,
) -> None:
    if ex.saver is None or guards_before is None:
        return
    ex.guards = guards_before
    ex.saver.save_partial(ex, [], [], "error", reroute=results, writes=writes)


def route_sync(ex: Execution, node: Node, router: Router) -> Any:
    view = view_of(ex.values, ex.flat)
    try:
        if router.takes_ctx:
            return router.func(view, _context(ex, node.name, ex.steps))
        return router.func(view)
    except Exception as exc:
        raise _node_error(ex, node.name, ex.steps, exc, router.name) from exc


async def route_async(ex: Execution, node: Node, router: Router) -> Any:
    if not router.is_async:
        return route_sync(ex, node, router)
    view = view_of(ex.values, ex.flat)
    try:
        if router.takes_ctx:
            return await router.func(view, _context(ex, node.name, ex.steps))
        return await router.func(view)
    except Exception as exc:
        raise _node_error(ex, node.name, ex.steps, exc, router.name) from exc


async def _call_async(
    ex: Execution, node: Node, arg: Any, values: dict[str, Any], step: int, answers: _Answers | None
) -> tuple[str, Any, float]:
    """Run one task; return ``("ok", out, seconds)``, ``("pause", p, 0)`` or ``("error", e, 0)``."""
    state = view_of(values, ex.flat) if arg is NO_ARG else arg
    if answers is not None:
        _current.set(answers)
    start = perf_counter()
    try:
        if node.takes_ctx:
            out = node.func(state, _context(ex, node.name, step))
        else:
            out = node.func(state)
        if node.is_async:
            out = await out
    except _Pause as pause:
        return ("pause", pause, 0.0)
    except InterruptWithoutCheckpointerError as exc:
        return ("raise", exc, 0.0)
    except Exception as exc:
        return ("error", exc, 0.0)
    return ("ok", out, perf_counter() - start)


async def _task_async(
    ex: Execution,
    index: int,
    values: dict[str, Any],
    step: int,
    answers: _Answers | None,
    recorder: Saving | None,
) -> tuple[str, Any, float]:
    """Run task ``index`` like :func:`_call_async`; record it as soon as it finished well."""
    node, arg = ex.tasks[index]
    kind, out, seconds = await _call_async(ex, node, arg, values, step, answers)
    if kind == "ok" and recorder is not None:
        try:
            update, goto = _outcome(ex.tables, node, out)
        except CorralError:
            return kind, out, seconds  # reported in task order after the barrier
        try:
            recorder.save_task(ex, (index, node, update, goto))
        except CorralError as exc:
            return ("raise", exc, 0.0)
    return kind, out, seconds


async def run_async(ex: Execution, loop: Loop) -> AsyncIterator[Event]:
    """Run ``ex`` like :func:`run_sync`, running the tasks of a superstep concurrently."""
    for event in _flush(ex):
        yield event
    emit = ex.emit
    checkpointing = ex.saver is not None
    while ex.status == "running" and (ex.tasks or ex.reroute):
        if ex.reroute is not None:
            results = ex.reroute
            ex.reroute = None
            writes: list[tuple[str, dict[str, Any]]] = []
        else:
            allowed, cap_error = _plan(ex)
            values = ex.values
            tasks = ex.tasks
            superstep = ex.supersteps + 1
            results = []
            pauses: list[dict[str, Any]] = []
            steps = {index: ex.steps + 1 + k for k, index in enumerate(allowed)}
            if emit is not None:
                for index in allowed:
                    node, arg = tasks[index]
                    emit(NodeStart(steps[index], node.name, superstep, arg is not NO_ARG))
                for event in _flush(ex):
                    yield event
            recorder = ex.saver if len(tasks) > 1 and checkpointing else None
            if recorder is not None and not recorder.records_tasks:
                recorder = None
            outcomes = await asyncio.gather(
                *(
                    _task_async(
                        ex,
                        index,
                        values,
                        steps[index],
                        _Answers(ex.answers.get(index, [])) if checkpointing else None,
                        recorder,
                    )
                    for index in allowed
                )
            )
            failure: BaseException | None = None
            for index, (kind, out, seconds) in zip(allowed, outcomes, strict=True):
                node = tasks[index][0]
                if kind == "raise":
                    raise out
                if kind == "pause":
                    pauses.append(_pause_record(ex, index, node, out))
                    continue
                if kind == "error":
                    if failure is None:
                        failure = _node_error(ex, node.name, steps[index], out)
                        failure.__cause__ = out
                    continue
                try:
                    results.append(_accept(ex, index, node, out, steps[index], seconds))
                except CorralError as error:
                    if failure is None:
                        failure = error
            for event in _flush(ex):
                yield event
            if failure is None and cap_error is not None:
                failure = cap_error
            if failure is not None:
                _fail(ex, _with_done(ex, results), pauses)
                raise failure
            merged = _barrier(ex, results, pauses, superstep)
            if merged is None:
                break
            results, writes = merged
        guards_before = dict(ex.guards) if checkpointing else None
        plain: list[Node] = []
        sends: list[Task] = []
        try:
            for result in results:
                node = result[1]
                router = node.router
                if node.then is not None:
                    take_routes(ex, node, node.then, "then", plain, sends)
                elif router is not None:
                    raw = await route_async(ex, node, router)
                    targets = router_targets(node, router, raw)
                    take_routes(ex, node, targets, "router", plain, sends)
                elif result[3] is not None:
                    take_routes(ex, node, result[3], "command", plain, sends)
        except CorralError as error:
            _reroute_failed(ex, results, writes, guards_before)
            raise error
        _finish(ex, loop, results, writes, plain, sends)
        for event in _flush(ex):
            yield event
    _end(ex)
    for event in _flush(ex):
        yield event
