"""Routing: where the tasks of a closed superstep go, and what the next superstep runs.

After the barrier merged a superstep's updates, the routes of its finished tasks are taken in
task order on the merged state: fixed ``then`` targets, the value a router returned (checked
against its annotation), or the targets of a returned ``Command`` (none: the branch ends).
A guarded route is counted when taken; once used up it goes to its guard's ``otherwise``
target, or the run stops with ``GuardExhaustedError``. Plain targets are de-duplicated, each
``Send`` is its own task, a ``wait_for`` join is held until every node it waits for has run
since its own last run, and the next tasks are sorted by registration order (the merge
order). Like :mod:`corral.runtime.superstep`, nothing here calls a router: a driver calls it
and hands the value to :meth:`Routing.take`.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from corral.control import Send
from corral.errors import GuardExhaustedError, RouteError, StuckJoinError
from corral.runtime.events import RouteTaken, SuperstepEnd
from corral.runtime.run_state import Pause, RunState, Targets, Task, TaskResult
from corral.runtime.tables import NO_ARG, Node, Router
from corral.spec import END

_new = tuple.__new__
"""Build a record (a NamedTuple) without its Python-level ``__new__``."""

__all__ = [
    "Routing",
    "leave_targets",
    "named_sends",
    "next_tasks",
    "pauses_at_barrier",
    "pauses_before",
    "router_targets",
    "sends_a_function",
    "stuck_join",
    "take_routes",
    "take_then",
]


def router_targets(node: Node, router: Router, raw: Any) -> Targets:
    """Return the targets a router's return value names, or raise ``RouteError``."""
    allowed = router.allowed
    if type(raw) is str:
        if raw in allowed:
            return (raw,)
    elif isinstance(raw, Send):
        if raw.node in allowed:
            return (raw,)
    elif isinstance(raw, (list, tuple)) and router.many:
        if all(
            isinstance(item, (str, Send))
            and (item.node if isinstance(item, Send) else item) in allowed
            for item in raw
        ):
            return tuple(raw)
    if sends_a_function(raw):
        named = named_sends(raw, router.node_names, f"router {router.name!r}", router.name)
        return router_targets(node, router, named)
    if isinstance(raw, (list, tuple)) and not router.many:
        why = "a list, but its annotation allows one target; annotate it list[Literal[...]]"
    else:
        why = f"not one of its routes {list(allowed)}"
    msg = (
        f"router {router.name!r} (after node {node.name!r}) returned {raw!r}, which is "
        f"{why}; return one of them or add it to its return annotation"
    )
    raise RouteError(msg, router=router.name, value=raw, allowed=allowed)


def sends_a_function(value: Any) -> bool:
    """Return whether ``value`` is (or lists) a ``Send`` naming its node by function."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    return any(isinstance(item, Send) and callable(item.node) for item in items)


def named_sends(value: Any, node_names: dict[int, tuple[str, ...]], owner: str, router: str) -> Any:
    """Return ``value`` with every ``Send(function, arg)`` in it read as ``Send(name, arg)``.

    ``owner`` says who returned it (for the message), ``router`` names it on the error.

    Raises:
        RouteError: a ``Send`` names a function that is not a node of this graph, or one
            registered as several nodes.
    """
    if isinstance(value, (list, tuple)):
        return [named_sends(item, node_names, owner, router) for item in value]
    if not isinstance(value, Send) or not callable(value.node):
        return value
    func = value.node
    names = node_names.get(id(func), ())
    if len(names) == 1:
        return Send(names[0], value.arg)
    label = getattr(func, "__qualname__", None) or repr(func)
    if names:
        why = f"is registered as several nodes {list(names)}; send to one of those names"
    else:
        why = (
            "is not a node of this graph; register it with @g.node(...) or send to the "
            "name of a node"
        )
    msg = f"{owner} returned Send({label}, ...), but the function {label!r} {why}"
    known = sorted(name for group in node_names.values() for name in group)
    raise RouteError(msg, router=router, value=value, allowed=known)


def leave_targets(node: Node, goto: Targets | None, raw: Any) -> tuple[Targets, str]:
    """Return where a finished node goes and how the way was chosen.

    ``raw`` is its router's return value (for a node with a router); ``goto`` the targets of
    the ``Command`` it returned. A ``Command`` node that returned no ``goto`` (a plain dict,
    ``None``, ``Command(update=...)``) ends its branch.
    """
    if node.then is not None:
        return node.then, "then"
    if node.router is not None:
        return router_targets(node, node.router, raw), "router"
    if goto is not None:
        return goto, "command"
    return (), "command"


class Routing:
    """The routes of one superstep's finished tasks, taken in task order.

    A driver calls :meth:`take` once per result (in order, calling the node's router first
    when :attr:`TaskResult.node` has one, so a router that reads ``ctx.guards`` sees the
    routes its earlier siblings took), then :meth:`finish`. When a router fails,
    :meth:`failed` saves the merged superstep so a resumed run routes it again.
    """

    __slots__ = ("guards_before", "plain", "results", "rs", "sends", "writes")

    def __init__(
        self, rs: RunState, results: list[TaskResult], writes: list[tuple[str, dict[str, Any]]]
    ) -> None:
        self.rs = rs
        self.results = results
        self.writes = writes
        self.plain: list[Node] = []
        self.sends: list[Task] = []
        self.guards_before = dict(rs.guards) if rs.checkpoints is not None else None

    def take(self, result: TaskResult, raw: Any = None) -> None:
        """Take the routes of ``result`` (``raw``: its router's return value, if it has one)."""
        _, node, _, goto = result
        # What leave_targets returns for a then= or router way out, without the call.
        if node.then is not None:
            if node.then_nodes is not None and self.rs.emit is None:
                take_then(self.rs, node.then_nodes, self.plain)
                return
            take_routes(self.rs, node, node.then, "then", self.plain, self.sends)
            return
        if node.router is not None:
            targets = router_targets(node, node.router, raw)
            take_routes(self.rs, node, targets, "router", self.plain, self.sends)
            return
        targets, via = leave_targets(node, goto, raw)
        take_routes(self.rs, node, targets, via, self.plain, self.sends)

    def defer(self, tasks: Sequence[Task]) -> None:
        """Add ``tasks``, which this superstep did not run, to the next superstep."""
        for task in tasks:
            if task.arg is not NO_ARG:
                self.sends.append(task)
            elif task.node not in self.plain:
                self.plain.append(task.node)

    def failed(self, error: Exception) -> None:
        """Save the merged superstep with its routes still to take (``error``: a router
        failed, or a route could not be taken)."""
        rs = self.rs
        if rs.checkpoints is None or self.guards_before is None:
            return
        rs.guards = self.guards_before
        rs.checkpoints.save_partial(
            rs, [], [], "error", reroute=self.results, writes=self.writes, error=error
        )

    def finish(self) -> None:
        """Set the next superstep's tasks, write the checkpoint and pause if one is due."""
        rs = self.rs
        tasks = next_tasks(rs, self.plain, self.sends)
        pauses = (
            pauses_at_barrier(rs, self.results, tasks) if rs.pause_after or rs.pause_before else []
        )
        rs.tasks = tasks
        if rs.done:
            rs.done = {}
        if rs.answers:
            rs.answers = {}
        if rs.emit is not None:
            rs.emit(SuperstepEnd(rs.supersteps, rs.steps, tuple(t.node.name for t in tasks)))
        if rs.checkpoints is not None:
            # A join still held when nothing else is left to run never runs: the run ends
            # with StuckJoinError (CR304), and the checkpoint says so.
            stuck = stuck_join(rs) if rs.held and not tasks else None
            rs.checkpoints.save_superstep(rs, self.writes, pauses, stuck)
        if pauses:
            rs.pause(pauses)


def take_routes(
    rs: RunState,
    node: Node,
    targets: Targets,
    via: str,
    plain: list[Node],
    sends: list[Task],
) -> None:
    """Count the guards of ``targets`` and add the tasks they lead to."""
    nodes = rs.tables.nodes
    guards = node.guards
    emit = rs.emit
    for item in targets:
        if type(item) is str:
            name: str = item
            arg = NO_ARG
            kind = via
        else:
            assert isinstance(item, Send)
            name = item.node
            arg = item.arg
            kind = "send"
        counted: tuple[int, int] | None = None
        guarded = guards.get(name) if guards else None
        if guarded is not None:
            name, counted, used_up = _count_guard(rs, node, name, guarded)
            if used_up:
                arg = NO_ARG
                kind = "otherwise"
        if emit is not None:
            emit(RouteTaken(node.name, name, kind, counted))  # type: ignore[arg-type]
        if name == END:
            continue
        target = nodes[name]
        if arg is not NO_ARG:
            sends.append(_new(Task, (target, arg)))
        elif target.wait_for:
            if name not in rs.held:
                rs.held.append(name)
        elif target not in plain:
            plain.append(target)


def take_then(rs: RunState, targets: tuple[Node, ...], plain: list[Node]) -> None:
    """Take unguarded ``then`` routes as :func:`take_routes` does, with no event to emit."""
    for target in targets:
        if target.wait_for:
            if target.name not in rs.held:
                rs.held.append(target.name)
        elif target not in plain:
            plain.append(target)


def _count_guard(
    rs: RunState, node: Node, name: str, guarded: Any
) -> tuple[str, tuple[int, int], bool]:
    """Count a guarded route; return the target taken, ``(count, max)`` and if used up."""
    key, guard = guarded
    count = rs.guards.get(key, 0)
    if count < guard.max:
        rs.guards[key] = count + 1
        return name, (count + 1, guard.max), False
    if guard.otherwise is not None:
        return guard.otherwise, (count, guard.max), True
    msg = (
        f"route {node.name!r} → {name!r} was already taken {guard.max} times "
        f"(Guard max={guard.max}) and its guard has no otherwise target; raise "
        f"max or give it one: Guard({name!r}, max={guard.max}, otherwise=END)"
    )
    raise GuardExhaustedError(msg, source=node.name, target=name, max=guard.max, state=rs.values)


def next_tasks(rs: RunState, plain: list[Node], sends: list[Task]) -> list[Task]:
    """Return the next superstep's tasks: routed nodes, released joins, then sends, in order."""
    if rs.held:
        nodes = rs.tables.nodes
        still: list[str] = []
        for name in rs.held:
            join = nodes[name]
            if join.wait_for <= rs.arrived.get(name, _NONE):
                if join not in plain:
                    plain.append(join)
                if rs.emit is not None:
                    rs.emit(RouteTaken(name, name, "join"))
            else:
                still.append(name)
        rs.held = still
    tasks = list(map(_task_of, plain))
    if sends:
        tasks.extend(sends)
    if len(tasks) > 1:
        tasks.sort(key=_task_order)
    return tasks


_NONE: frozenset[str] = frozenset()
_task_of = attrgetter("task")
_task_order = attrgetter("node.order")
"""The merge order of a task: its node's registration index (read in C)."""


def pauses_at_barrier(rs: RunState, results: list[TaskResult], tasks: list[Task]) -> list[Pause]:
    """Return the ``interrupt_after`` pauses of ``results``, then ``interrupt_before``'s."""
    pauses: list[Pause] = []
    if rs.pause_after:
        for result in results:
            if result.node.name in rs.pause_after:
                pauses.append(Pause(result.position, result.node.name, None, "after"))
    if rs.pause_before:
        pauses.extend(pauses_before(rs, tasks))
    return pauses


def pauses_before(rs: RunState, tasks: Sequence[Task]) -> list[Pause]:
    """Return the ``interrupt_before`` pauses of ``tasks`` (one per node)."""
    pauses: list[Pause] = []
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        name = task.node.name
        if name in rs.pause_before and name not in seen:
            seen.add(name)
            pauses.append(Pause(index, name, None, "before"))
    return pauses


def stuck_join(rs: RunState) -> StuckJoinError:
    """Return the error of a run that would end while a ``wait_for`` join still waits."""
    name = rs.held[0]
    join = rs.tables.nodes[name]
    arrived = rs.arrived.get(name, set())
    missing = tuple(sorted(join.wait_for - arrived))
    msg = (
        f"the run would end while join {name!r} still waits for {list(missing)} "
        f"(wait_for={sorted(join.wait_for)}); route to those nodes before the run ends, or "
        f"drop them from its wait_for (CR304)"
    )
    return StuckJoinError(
        msg, join=name, waiting_for=missing, wait_for=tuple(sorted(join.wait_for)), state=rs.values
    )
