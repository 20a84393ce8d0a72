"""Dispatch tables built once at compile time from a :class:`~corral.spec.GraphSpec`.

The runtime reads these instead of the spec: each node knows its function, how it leaves
(fixed ``then`` targets, a router, or ``Command`` targets), its route to each target it may
name (the target's node, the guard that counts it and that guard's ``otherwise`` route), the
joins that wait for it and its caps. Only the spec is read here (not the DSL): the empty
value of a reducer key comes from ``KeySpec.empty``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corral.cost import FIELDS, Cost
from corral.fingerprint import fingerprint
from corral.retry import Retry
from corral.spec import END, GraphSpec, Guard, NodeSpec, RouterSpec

__all__ = ["NO_ARG", "Node", "Route", "Tables", "Task"]


class _NoArg:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_ARG"


NO_ARG: Any = _NoArg()
"""The argument of a task that reads the state (not started by a ``Send``)."""


@dataclass(frozen=True, slots=True, eq=False)
class Task:
    """A node to run and its ``Send`` argument (``NO_ARG`` for a run that reads the state).

    Compared by identity: the run of a node on the state is always that node's ``task``,
    and each ``Send`` is a task of its own (its argument is never compared)."""

    node: Node
    arg: Any


@dataclass(frozen=True, slots=True, eq=False)
class Route:
    """One way out of a node, as the core takes it: to ``target`` (``node`` is its node,
    ``None`` for ``END``), taken ``via`` its ``then``, router or ``Command`` (or as a guard's
    ``"otherwise"``), counted by ``guard`` under ``key`` when it has one; once that guard is
    used up, ``otherwise`` is the route taken instead (``None``: the run stops)."""

    target: str
    node: Node | None
    via: str
    guard: Guard | None = None
    key: tuple[str, str] = ("", "")
    otherwise: Route | None = None


@dataclass(slots=True, eq=False)
class Node:
    """A node as the engine runs it (one object per node: compared by identity)."""

    name: str
    func: Callable[..., Any]
    order: int
    """Registration index: the merge order of a superstep."""
    path: str = ""
    """Its name from the top-level graph (``research/search`` inside the subgraph node
    ``research``): what its trace records and events say; its own graph's checkpoints keep
    ``name``."""
    takes_ctx: bool = False
    is_async: bool = False
    max_runs: int | None = None
    then: tuple[str, ...] | None = None
    router: RouterSpec | None = None
    command: tuple[str, ...] | None = None
    """The ``Command[Literal[...]]`` targets, for a command node."""
    routes: dict[str, Route] = field(default_factory=dict)
    """Its route to each target its way out (``then``, router or command) may name."""
    wait_for: frozenset[str] = frozenset()
    joins: tuple[str, ...] = ()
    """The join nodes whose ``wait_for`` names this node."""
    retry: Retry | None = None
    timeout_s: float | None = None
    """Seconds an async node may run (``timeout=``)."""
    child: Any = None
    """The :class:`~corral.runtime.child_graph.ChildGraph` a subgraph node runs (set by the
    app, which knows the checkpointer)."""
    cost: Cost | None = None
    """The most one run of the node may spend: its declared cost times its attempts."""
    task: Task = field(init=False, repr=False)
    """The task that runs this node on the state (not from a ``Send``)."""

    def __post_init__(self) -> None:
        self.task = Task(self, NO_ARG)


class Tables:
    """Everything the engine reads while running one graph: its dispatch tables, built once
    at compile time from a checked graph."""

    def __init__(self, spec: GraphSpec, prefix: str = "") -> None:
        """``prefix``: the path of the graph's nodes from the top-level graph (``research/``
        for the child of the subgraph node ``research``)."""
        self.spec = spec
        self.prefix = prefix
        self.nodes: dict[str, Node] = {}
        self.node_names: dict[int, tuple[str, ...]] = {}
        """Node names by the ``id`` of their function, to read ``Send(function, arg)``."""
        guards: dict[str, dict[str, Guard]] = {}  # per node, by target: a router's win
        for order, ns in enumerate(spec.nodes):
            if ns.name not in self.nodes:
                self.nodes[ns.name] = _node(ns, order, prefix)
                guards[ns.name] = {guard.target: guard for guard in ns.guards}
                key = id(ns.func)
                self.node_names[key] = (*self.node_names.get(key, ()), ns.name)
        for rs in spec.routers:
            source = self.nodes.get(rs.source)
            if source is None or source.router is not None:
                continue
            source.router = rs
            guards[rs.source].update((guard.target, guard) for guard in rs.guards)
        for node in self.nodes.values():
            node.routes = _routes(node, guards[node.name], self.nodes)
        self.has_joins = _note_joins(self.nodes)
        self.has_subgraphs = any(ns.subgraph is not None for ns in spec.nodes)
        self.has_async = any(
            n.is_async or (n.router is not None and n.router.is_async) for n in self.nodes.values()
        )
        self.starts = tuple(self.nodes[ns.name].task for ns in spec.nodes if ns.start)
        """The first tasks of a run: each start node's run on the state."""
        self.guard_keys = tuple((name, target) for name, by in guards.items() for target in by)
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
        self.fingerprint = fingerprint(spec)
        self.costs_checked = _declared_fields(spec)
        """The fields of spending held to the nodes' declared costs (``Purse.checked``)."""


def _node(ns: NodeSpec, order: int, prefix: str) -> Node:
    """Return the engine's node of ``ns``, the ``order``-th node registered."""
    attempts = ns.retry.attempts if ns.retry is not None else 1
    return Node(
        ns.name,
        ns.func,
        order,
        prefix + ns.name,
        takes_ctx=ns.takes_ctx,
        is_async=ns.is_async,
        max_runs=ns.max_runs,
        then=ns.then,
        command=(ns.command.names or ()) if ns.command is not None else None,
        wait_for=frozenset(ns.wait_for),
        retry=ns.retry,
        timeout_s=ns.timeout_s,
        cost=ns.cost * attempts if ns.cost is not None else None,
    )


def _routes(node: Node, guards: dict[str, Guard], nodes: dict[str, Node]) -> dict[str, Route]:
    """Return the routes of ``node``'s way out (``then``, else its router, else its
    ``Command`` targets) by target, each with its guard from ``guards``."""
    if node.then is not None:
        targets, via = node.then, "then"
    elif node.router is not None:
        targets, via = node.router.targets.names or (), "router"
    else:
        targets, via = node.command or (), "command"
    reach: dict[str, Node | None] = {**nodes, END: None}  # END: the run's end
    routes: dict[str, Route] = {}
    for target in targets:
        guard = guards.get(target)
        otherwise = guard.otherwise if guard is not None else None
        fallback = None if otherwise is None else Route(otherwise, reach[otherwise], "otherwise")
        routes[target] = Route(target, reach[target], via, guard, (node.name, target), fallback)
    return routes


def _note_joins(nodes: dict[str, Node]) -> bool:
    """Give each node the joins that wait for it; return whether the graph has any."""
    joins: dict[str, list[str]] = {}
    for node in nodes.values():
        for waited in sorted(node.wait_for):
            joins.setdefault(waited, []).append(node.name)
    for name, waiting in joins.items():
        if name in nodes:
            nodes[name].joins = tuple(waiting)
    return bool(joins)


def _declared_fields(spec: GraphSpec) -> frozenset[str]:
    """Return the fields of cost that ``spec`` (or a subgraph of it) declares: in a node's
    cost, or limited by its budget (the cost ceiling holds the others at 0 without a claim)."""
    found = {f for f in FIELDS if spec.budget is not None and getattr(spec.budget, f) is not None}
    for node in spec.nodes:
        if node.cost is not None:
            found.update(f for f in FIELDS if getattr(node.cost, f))
        if node.subgraph is not None:
            found.update(_declared_fields(node.subgraph.graph))
    return frozenset(found)
