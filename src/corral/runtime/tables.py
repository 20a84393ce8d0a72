"""Dispatch tables built once at compile time from a :class:`~corral.spec.GraphSpec`.

The engine's hot path reads these instead of the spec: each node knows its function, how it
leaves (fixed ``then`` targets, a router, or ``Command`` targets), its guards keyed by target,
the joins that wait for it and its caps, so a node run costs a few attribute reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from corral.schema import empty_value
from corral.spec import END, GraphSpec, Guard

__all__ = ["NO_ARG", "Node", "Router", "Tables", "build_tables"]


class _NoArg:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_ARG"


NO_ARG: Any = _NoArg()
"""The argument of a task that reads the state (not started by a ``Send``)."""


class Router:
    """A router as the engine calls it."""

    __slots__ = ("allowed", "func", "guards", "is_async", "many", "name", "takes_ctx")

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


class Node:
    """A node as the engine runs it."""

    __slots__ = (
        "command",
        "fast",
        "func",
        "guards",
        "hot",
        "is_async",
        "joins",
        "max_runs",
        "name",
        "order",
        "router",
        "simple",
        "takes_ctx",
        "then",
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
        self.simple = False
        """True when the hot path may run it: no joins, no cap of its own, no context."""
        self.fast: dict[str, tuple[tuple[Node, Any] | None, tuple[str, str] | None, int]] = {}
        """Per single target: the next task (``None`` for END), the guard key and its max.

        Only targets the hot path can take alone are here (not joins)."""
        self.hot: tuple[Any, ...] = ()
        """What the engine's hot path reads of a node, in one tuple (set by ``build_tables``)."""


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
            key.name: empty_value(key.type) for key in spec.keys if key.reducer is not None
        }
        self.starts: tuple[str, ...] = ()
        self.guard_keys: tuple[tuple[str, str], ...] = ()
        self.has_async = False
        self.has_joins = False
        self.fingerprint = ""


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
        node.then = ns.then
        if ns.command is not None:
            node.command = ns.command.names or ()
        node.wait_for = frozenset(ns.wait_for)
        for guard in ns.guards:
            node.guards[guard.target] = ((ns.name, guard.target), guard)
        tables.nodes[ns.name] = node
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
        node.simple = not (node.joins or node.wait_for or node.max_runs or node.takes_ctx)
        targets = list(node.then or ())
        if node.router is not None:
            targets.extend(node.router.allowed)
        targets.extend(node.command or ())
        for target in targets:
            following = tables.nodes.get(target)
            if target != END and (following is None or following.wait_for):
                continue
            task = (following, NO_ARG) if following is not None else None
            guarded = node.guards.get(target)
            if guarded is None:
                node.fast[target] = (task, None, 0)
            else:
                node.fast[target] = (task, guarded[0], guarded[1].max)
        router = node.router
        node.hot = (
            node.name,
            node.func,
            node.then,
            router,
            router.func if router is not None else None,
            router.takes_ctx if router is not None else False,
            router.allowed if router is not None else (),
            node.fast,
        )
    tables.starts = tuple(ns.name for ns in spec.nodes if ns.start and ns.name in tables.nodes)
    tables.guard_keys = tuple(
        key for node in tables.nodes.values() for key, _ in node.guards.values()
    )
    tables.has_async = any(
        n.is_async or (n.router is not None and n.router.is_async) for n in tables.nodes.values()
    )
    tables.fingerprint = fingerprint(spec)
    return tables


def fingerprint(spec: GraphSpec) -> str:
    """Return a short hash of the node names and their routes.

    A checkpoint records it so that resuming with a graph whose nodes or routes changed is
    detected instead of running the wrong node.
    """
    shape: list[Any] = []
    for ns in spec.nodes:
        routers = [
            [list(r.targets.names or ()), list(r.targets.sends)]
            for r in spec.routers
            if r.source == ns.name
        ]
        shape.append(
            [
                ns.name,
                list(ns.then or ()),
                list(ns.command.names or ()) if ns.command is not None else None,
                routers,
                sorted(ns.wait_for),
            ]
        )
    text = json.dumps(shape, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
