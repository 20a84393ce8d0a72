"""What the builder needs for subgraphs, retries and timeouts, kept out of ``dsl.py``.

A subgraph node is recorded like a function node, with the child ``Graph`` beside it; when
the parent's spec is read, the child's spec is read too and becomes the node's
:class:`~corral.spec.SubgraphSpec`. The node's write set, which the state rules (CR301,
CR302) read, is what reaches the parent: the keys of ``output=``'s dict literals when it is
given, otherwise the keys both schemas share that a child node writes.

A graph cannot contain itself, directly or through its children: reading the spec keeps the
chain of graphs being read and refuses one that is already on it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from corral.errors import GraphError
from corral.retry import Retry
from corral.spec import GraphSpec, KeySpec, NodeSpec, SubgraphSpec
from corral.writes import infer_writes

__all__ = [
    "SpecSource",
    "SubgraphEntry",
    "check_child",
    "check_count",
    "check_retry",
    "check_timeout",
    "default_name",
    "is_async",
    "read_child",
    "stand_in",
    "writes_of",
]


class SpecSource(Protocol):
    """What a subgraph node reads of its child (a ``Graph``, checked by ``g.subgraph``)."""

    def spec(self) -> GraphSpec: ...


@dataclass(frozen=True)
class SubgraphEntry:
    """A child graph registered with ``g.subgraph``, as given."""

    child: SpecSource
    input: Callable[[Any], Any] | None
    output: Callable[[Any], Any] | None


def check_retry(retry: object, where: str) -> Retry | None:
    """Return ``retry`` if it is a ``Retry`` or ``None``; raise ``GraphError`` otherwise."""
    if retry is None or isinstance(retry, Retry):
        return retry
    msg = f"{where} retry={retry!r} is not a Retry; pass e.g. retry=Retry(attempts=3)"
    raise GraphError(msg)


def check_count(value: object, name: str, unit: str, *, least: int) -> None:
    """Raise ``GraphError`` unless ``value`` is a whole number (``int``, not ``bool``) of at
    least ``least``; ``name=`` took it, counting ``unit``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        msg = f"{name}={value!r} must be a whole number of {unit}, {least} or more"
        raise GraphError(msg)


def check_timeout(timeout: object) -> float | None:
    """Return ``timeout`` as seconds, or raise ``GraphError`` for anything but a positive number."""
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        msg = f"timeout={timeout!r} must be a number of seconds above 0 (or None for no limit)"
        raise GraphError(msg)
    return float(timeout)


def check_child(parent: SpecSource, child: object, name: str, graph: type[SpecSource]) -> None:
    """Raise ``GraphError`` unless ``child`` is a ``graph`` (``Graph``) other than ``parent``."""
    if child is parent:
        msg = f"subgraph {name!r} is the graph it is registered on; a graph cannot contain itself"
        raise GraphError(msg)
    if not isinstance(child, graph):
        hint = ""
        if isinstance(getattr(child, "spec", None), GraphSpec):
            hint = " (a compiled app: pass the Graph it was compiled from, not g.compile())"
        msg = f"subgraph {name!r} needs a corral Graph, got {child!r}{hint}"
        raise GraphError(msg)


_reading = threading.local()
"""``chain``: the graphs whose specs this thread is reading, outermost first."""


def read_child(entry: SubgraphEntry, name: str, parent_keys: tuple[KeySpec, ...]) -> SubgraphSpec:
    """Read the child's spec now and return the node's :class:`SubgraphSpec`."""
    chain: list[SpecSource] = getattr(_reading, "chain", [])
    if any(g is entry.child for g in chain):
        msg = (
            f"subgraph {name!r} contains a graph that contains it; "
            "a graph cannot contain itself, directly or through its subgraphs"
        )
        raise GraphError(msg)
    _reading.chain = [*chain, entry.child]
    try:
        child = entry.child.spec()
    finally:
        _reading.chain = chain
    child_keys = {k.name for k in child.keys}
    shared = tuple(k.name for k in parent_keys if k.name in child_keys)
    return SubgraphSpec(child, shared, entry.input, entry.output)


def writes_of(sub: SubgraphSpec) -> frozenset[str] | None:
    """Return the parent keys a subgraph node may write, or ``None`` when unknown."""
    if sub.output is not None:
        return infer_writes(sub.output)
    written: set[str] = set()
    for node in sub.graph.nodes:
        if node.writes is None:
            return None
        written |= node.writes
    return frozenset(written & set(sub.shared))


def find_node(spec: GraphSpec, path: str) -> NodeSpec | None:
    """Return the node ``path`` names: a node of ``spec``, or ``sub/node`` inside a subgraph."""
    found = spec.node(path)
    if found is not None or "/" not in path:
        return found
    head, _, rest = path.partition("/")
    outer = spec.node(head)
    if outer is None or outer.subgraph is None:
        return None
    return find_node(outer.subgraph.graph, rest)


def is_async(spec: GraphSpec) -> bool:
    """Return whether any node or router of ``spec`` or of its subgraphs is async."""
    return any(r.is_async for r in spec.routers) or any(
        n.is_async or (n.subgraph is not None and is_async(n.subgraph.graph)) for n in spec.nodes
    )


def stand_in(name: str) -> Callable[..., Any]:
    """Return the function a subgraph node's spec holds: the engine runs the child instead."""

    def run_subgraph(state: Any) -> Any:
        msg = f"subgraph node {name!r} is run by the engine, not called as a function"
        raise GraphError(msg)

    run_subgraph.__qualname__ = f"subgraph {name!r}"
    return run_subgraph


def default_name(func: Callable[..., Any]) -> str:
    """Return the name a node gets when ``name=`` is omitted."""
    name = getattr(func, "__name__", None)
    if isinstance(name, str):
        return name
    spec = getattr(func, "spec", None)
    if isinstance(spec, GraphSpec) and spec.name:
        return spec.name
    return type(func).__name__
