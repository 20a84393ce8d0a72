"""The graph fingerprint a checkpoint records, so that resuming a thread with a graph whose
nodes or routes changed is refused instead of running the wrong node.

It hashes what decides where a run goes: the node names in registration order (the order
of a superstep's tasks, so of its merges) and, per node, its routes as sets (``then=``,
``Command[Literal[...]]`` targets, each router's targets and ``Send`` targets, the joins it
waits for). Sets, because the order a route's targets are listed in decides nothing, and
because that order is not even stable across processes: typing caches ``Literal`` by
equality, so after ``Command[Literal["y", "x"]]`` anywhere in a process,
``Command[Literal["x", "y"]]`` reads ``("y", "x")`` in that process.

Threads saved by corral releases whose fingerprint kept the listed order carry that form
(:func:`legacy_fingerprint`): it is accepted when this process lists the routes as the
writer did, and the run's next checkpoint records the order-free form.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

from corral.spec import GraphSpec, NodeSpec

__all__ = ["fingerprint", "legacy_fingerprint", "same_graph"]


def fingerprint(spec: GraphSpec) -> str:
    """Return a short hash of the node names and their routes, whatever their listed order.

    >>> from typing import TypedDict
    >>> from corral import END, Graph
    >>> class S(TypedDict):
    ...     n: int
    >>> def shape(first: str, second: str) -> str:
    ...     g = Graph(S)
    ...     g.node("a", start=True, then=[first, second])(lambda s: {})
    ...     g.node("b", then=END)(lambda s: {})
    ...     g.node("c", then=END)(lambda s: {})
    ...     return fingerprint(g.spec())
    >>> shape("b", "c") == shape("c", "b")
    True
    """
    return _hash([_shape(spec, ns, sorted) for ns in spec.nodes])


def legacy_fingerprint(spec: GraphSpec) -> str:
    """Return the fingerprint as corral recorded it before it ignored route order (routes
    in the order this process lists them)."""
    return _hash([_shape(spec, ns, list) for ns in spec.nodes])


def same_graph(recorded: str, spec: GraphSpec, current: str) -> bool:
    """Return whether a checkpoint that recorded ``recorded`` was written by this graph,
    whose fingerprint is ``current``: the same, or the same in the legacy form."""
    return recorded == current or recorded == legacy_fingerprint(spec)


def _shape(spec: GraphSpec, ns: NodeSpec, order: Callable[[Iterable[str]], list[str]]) -> list[Any]:
    # Only a source's first router is used, so the routers keep their order.
    routers = [
        [order(r.targets.names or ()), order(r.targets.sends)]
        for r in spec.routers
        if r.source == ns.name
    ]
    return [
        ns.name,
        order(ns.then or ()),
        order(ns.command.names or ()) if ns.command is not None else None,
        routers,
        sorted(ns.wait_for),
    ]


def _hash(shape: list[Any]) -> str:
    text = json.dumps(shape, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
