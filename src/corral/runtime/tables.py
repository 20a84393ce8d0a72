"""Dispatch tables built once at compile time from a :class:`~corral.spec.GraphSpec`.

The runtime reads these instead of the spec: each node knows its function, how it leaves
(fixed ``then`` targets, a router, or ``Command`` targets), its guards keyed by target, the
joins that wait for it and its caps, so a node run costs a few attribute reads. Only the spec
is read here (not the DSL): the empty value of a reducer key comes from ``KeySpec.empty``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from corral.fingerprint import fingerprint
from corral.retry import Retry
from corral.spec import END, GraphSpec, Guard

__all__ = ["NO_ARG", "AloneRoute", "Node", "Router", "Tables", "Task", "build_tables"]


class _NoArg:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_ARG"


NO_ARG: Any = _NoArg()
"""The argument of a task that reads the state (not started by a ``Send``)."""


class Task(NamedTuple):
    """A node to run and its ``Send`` argument (``NO_ARG`` for a run that reads the state)."""

    node: Node
    arg: Any


class AloneRoute(NamedTuple):
    """A route that leads to one plain task (or ``END``) on its own, with its guard."""

    tasks: tuple[Task, ...]
    """The next superstep's tasks: the target alone, or none for ``END``."""
    guard: tuple[str, str] | None
    """The guard key ``(source, target)`` of the route, if guarded."""
    max: int
    """The guard's ``max`` (0 for an unguarded route)."""
    node: Node | None
    """The target when the inline path may run it next (:attr:`Node.inline`); else ``None``."""


class Router:
    """A router as the engine calls it."""

    __slots__ = ("allowed", "func", "is_async", "many", "name", "node_names", "takes_ctx")

    def __init__(
        self,
        name: str,
        func: Callable[..., Any],
        allowed: tuple[str, ...],
        many: bool,
        takes_ctx: bool,
        is_async: bool,
    ) -> None:
        self.name = name
        self.func = func
        self.allowed = allowed
        self.many = many
        self.takes_ctx = takes_ctx
        self.is_async = is_async
        self.node_names: dict[int, tuple[str, ...]] = {}
        """The graph's :attr:`Tables.node_names`, to read ``Send(function, arg)``."""


class Node:
    """A node as the engine runs it."""

    __slots__ = (
        "alone",
        "child",
        "command",
        "func",
        "guards",
        "inline",
        "inline_router",
        "is_async",
        "joins",
        "max_runs",
        "name",
        "order",
        "retry",
        "router",
        "takes_ctx",
        "task",
        "then",
        "then_nodes",
        "then_tasks",
        "timeout_s",
        "wait_for",
    )

    def __init__(self, name: str, func: Callable[..., Any], order: int) -> None:
        self.name = name
        self.func = func
        self.order = order
        """Registration index: the merge order of a superstep."""
        self.takes_ctx = False
        self.is_async = False
        self.max_runs: int | None = None
        self.then: tuple[str, ...] | None = None
        self.router: Router | None = None
        self.command: tuple[str, ...] | None = None
        """The ``Command[Literal[...]]`` targets, for a command node."""
        self.guards: dict[str, tuple[tuple[str, str], Guard]] = {}
        """Guards of this node's routes (``then``, router or command), keyed by target."""
        self.wait_for: frozenset[str] = frozenset()
        self.joins: tuple[str, ...] = ()
        """The join nodes whose ``wait_for`` names this node."""
        self.task = Task(self, NO_ARG)
        """The task that runs this node on the state (not from a ``Send``)."""
        self.inline = False
        """Whether the inline path may run it: no cap of its own, no context, no retry."""
        self.inline_router: Router | None = None
        """The router the inline loop calls itself (no ``then``, no context, no join to
        note); ``None``: the node leaves through the inline path's general way out."""
        self.alone: dict[str, AloneRoute] = {}
        """Per target that leads to one plain task (or END): that route, for the inline path.

        Joins are not here: a route into a join is taken by the superstep core."""
        self.then_nodes: tuple[Node, ...] | None = None
        """The nodes of fixed ``then`` targets with no guard (``END`` left out), in the order
        written; ``None`` for other nodes."""
        self.then_tasks: tuple[Task, ...] | None = None
        """The next tasks after fixed ``then`` targets with no guard and no join among them
        (in merge order, ``END`` left out), for the inline path; ``None`` for other nodes."""
        self.retry: Retry | None = None
        self.timeout_s: float | None = None
        """Seconds an async node may run (``timeout=``)."""
        self.child: Any = None
        """The :class:`~corral.runtime.subgraphs.ChildGraph` a subgraph node runs (set by the
        app, which knows the checkpointer)."""


class Tables:
    """Everything the engine reads while running one graph."""

    def __init__(self, spec: GraphSpec) -> None:
        self.spec = spec
        self.nodes: dict[str, Node] = {}
        self.reducers: dict[str, Callable[[Any, Any], Any] | None] = {
            key.name: key.reducer for key in spec.keys
        }
        self.keyset: frozenset[str] = frozenset(self.reducers)
        self.empties: dict[str, Any] = {
            key.name: key.empty for key in spec.keys if key.reducer is not None
        }
        self.last_write: frozenset[str] = frozenset(
            key.name for key in spec.keys if key.reducer is None
        )
        """The keys without a reducer: a write replaces their value."""
        self.starts: tuple[str, ...] = ()
        self.guard_keys: tuple[tuple[str, str], ...] = ()
        self.has_async = False
        self.has_joins = False
        self.has_subgraphs = False
        self.fingerprint = ""
        self.node_names: dict[int, tuple[str, ...]] = {}
        """Node names by the ``id`` of their function, to read ``Send(function, arg)``."""


def build_tables(spec: GraphSpec) -> Tables:
    """Return the dispatch tables of a checked graph."""
    tables = Tables(spec)
    for order, ns in enumerate(spec.nodes):
        if ns.name in tables.nodes:
            continue
        node = Node(ns.name, ns.func, order)
        node.takes_ctx = ns.takes_ctx
        node.is_async = ns.is_async
        node.max_runs = ns.max_runs
        node.retry = ns.retry
        node.timeout_s = ns.timeout_s
        node.then = ns.then
        if ns.command is not None:
            node.command = ns.command.names or ()
        node.wait_for = frozenset(ns.wait_for)
        for guard in ns.guards:
            node.guards[guard.target] = ((ns.name, guard.target), guard)
        tables.nodes[ns.name] = node
        key = id(ns.func)
        tables.node_names[key] = (*tables.node_names.get(key, ()), ns.name)
    for rs in spec.routers:
        source = tables.nodes.get(rs.source)
        if source is None or source.router is not None:
            continue
        source.router = Router(
            rs.name,
            rs.func,
            rs.targets.names or (),
            rs.targets.many,
            rs.takes_ctx,
            rs.is_async,
        )
        source.router.node_names = tables.node_names
        for guard in rs.guards:
            source.guards[guard.target] = ((rs.source, guard.target), guard)
    joins: dict[str, list[str]] = {}
    for node in tables.nodes.values():
        for waited in sorted(node.wait_for):
            joins.setdefault(waited, []).append(node.name)
    for name, waiting in joins.items():
        if name in tables.nodes:
            tables.nodes[name].joins = tuple(waiting)
    tables.has_joins = bool(joins)
    for node in tables.nodes.values():
        subgraph = _is_subgraph(spec, node.name)
        tables.has_subgraphs = tables.has_subgraphs or subgraph
        node.inline = not (node.max_runs or node.takes_ctx or node.retry or subgraph)
        router = node.router
        if router is not None and not (
            node.then is not None or router.takes_ctx or node.joins or node.wait_for
        ):
            node.inline_router = router
    for node in tables.nodes.values():
        node.alone = _alone_routes(tables, node)
        node.then_tasks = _then_tasks(tables, node)
        node.then_nodes = _then_nodes(tables, node)
    tables.starts = tuple(ns.name for ns in spec.nodes if ns.start and ns.name in tables.nodes)
    tables.guard_keys = tuple(
        key for node in tables.nodes.values() for key, _ in node.guards.values()
    )
    tables.has_async = any(
        n.is_async or (n.router is not None and n.router.is_async) for n in tables.nodes.values()
    )
    tables.fingerprint = fingerprint(spec)
    return tables


def _is_subgraph(spec: GraphSpec, name: str) -> bool:
    found = spec.node(name)
    return found is not None and found.subgraph is not None


def _alone_routes(tables: Tables, node: Node) -> dict[str, AloneRoute]:
    # The targets of the node's way out, in the order the runtime reads them (then=, a
    # router, a Command), so a route is never taken alone from another way.
    if node.then is not None:
        targets: tuple[str, ...] = node.then
    elif node.router is not None:
        targets = node.router.allowed
    else:
        targets = node.command or ()
    routes: dict[str, AloneRoute] = {}
    for target in targets:
        following = tables.nodes.get(target)
        if target != END and (following is None or following.wait_for):
            continue
        tasks = (following.task,) if following is not None else ()
        inline = following if following is not None and following.inline else None
        guarded = node.guards.get(target)
        if guarded is None:
            routes[target] = AloneRoute(tasks, None, 0, inline)
        else:
            routes[target] = AloneRoute(tasks, guarded[0], guarded[1].max, inline)
    return routes


def _then_nodes(tables: Tables, node: Node) -> tuple[Node, ...] | None:
    if node.then is None or any(target in node.guards for target in node.then):
        return None
    return tuple(tables.nodes[target] for target in node.then if target in tables.nodes)


def _then_tasks(tables: Tables, node: Node) -> tuple[Task, ...] | None:
    if node.then is None or any(target in node.guards for target in node.then):
        return None
    names = [target for target in node.then if target != END]
    if any(name not in tables.nodes or tables.nodes[name].wait_for for name in names):
        return None
    unique = {name: tables.nodes[name] for name in names}.values()
    return tuple(target.task for target in sorted(unique, key=lambda target: target.order))
