"""Checking a graph with its subgraphs, and the rules about what a node may be.

A child graph is checked with its parent: :func:`child_diagnostics` analyses each child
once (a child used twice, or nested deeper, is reported at its first path) and returns its
findings with the child's own file and line, the node names turned into paths
(``research/plan``) and the message saying which subgraph it is in. The parent itself sees
a subgraph node as a node whose write set is what reaches the parent (set by the builder),
so the state rules (CR301, CR302) need nothing here.

Two rules live here because they are about what a node is rather than how the graph is
shaped: ``timeout=`` on a node that cannot be cancelled (CR111) and a corral graph
registered as a plain node (CR112).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from corral.analysis._graph import SpecGraph
from corral.analysis.diagnostic import Diagnostic
from corral.analysis.rules._base import Finding, rule
from corral.spec import GraphSpec

__all__ = ["child_diagnostics", "compiled_graph_nodes", "sync_timeouts"]


def _graph_kind(func: Callable[..., Any]) -> str | None:
    """Return ``"compiled graph"`` or ``"Graph"`` when ``func`` is a corral graph, else ``None``.

    Read by shape, not by type, so that the analyser imports neither the runtime nor the DSL:
    a compiled app holds its ``GraphSpec`` as ``.spec``; a ``Graph`` has ``spec()`` and
    ``subgraph()`` methods.
    """
    spec = getattr(func, "spec", None)
    if isinstance(spec, GraphSpec):
        return "compiled graph"
    if callable(spec) and callable(getattr(func, "subgraph", None)):
        return "Graph"
    return None


@rule("CR112", "graph-as-node")
def compiled_graph_nodes(graph: SpecGraph) -> Iterator[Finding]:
    """Report corral graphs (compiled or not) registered as plain nodes."""
    for node in graph.nodes:
        kind = _graph_kind(node.func)
        if kind is None:
            continue
        yield Finding(
            f"node {node.name!r} is a {kind}, which cannot be called as a node function; "
            f"register the child Graph with g.subgraph({node.name!r}, child, then=...) "
            "(pass the Graph, not g.compile())",
            (node.name,),
        )


@rule("CR111", "sync-timeout")
def sync_timeouts(graph: SpecGraph) -> Iterator[Finding]:
    """Report ``timeout=`` on a sync node, which cannot be cancelled."""
    for node in graph.nodes:
        if node.timeout_s is None or node.is_async:
            continue
        if node.subgraph is not None:
            continue  # g.subgraph takes no timeout=
        yield Finding(
            f"node {node.name!r} has timeout={node.timeout_s:g} but is a sync function: a "
            "thread cannot be stopped safely, so corral cannot cancel it; make it an async "
            "def (and await its I/O), or drop timeout= and give the client it calls a "
            "timeout of its own",
            (node.name,),
        )


def child_diagnostics(
    graph: SpecGraph, analyse: Callable[[GraphSpec], list[Diagnostic]]
) -> list[Diagnostic]:
    """Return the findings of every subgraph of ``graph``, named by path.

    ``analyse`` checks one graph (the analyser's own entry point, which calls back here for
    deeper children). Findings a subgraph node's ``ignore=`` covers are dropped.
    """
    found: list[Diagnostic] = []
    seen: list[GraphSpec] = []
    for node in graph.nodes:
        if node.subgraph is None:
            continue
        child = node.subgraph.graph
        if child in seen:
            continue  # the same child twice: one defect, reported once
        seen.append(child)
        for diagnostic in analyse(child):
            if any(diagnostic.code.startswith(prefix) for prefix in node.ignore):
                continue
            found.append(_in_child(diagnostic, node.name))
    return found


def _in_child(diagnostic: Diagnostic, name: str) -> Diagnostic:
    prefix = f"{name}/"
    nodes = tuple(prefix + n for n in diagnostic.nodes)
    message = diagnostic.message
    # A deeper child's message already says "in subgraph 'inner': "; name the whole path.
    nested = "in subgraph '"
    if message.startswith(nested):
        inner, _, rest = message[len(nested) :].partition("': ")
        message = f"in subgraph {prefix + inner!r}: {rest}"
    else:
        message = f"in subgraph {name!r}: {message}"
    return dataclasses.replace(diagnostic, nodes=nodes, message=message)
