"""Lint LangGraph graphs: read a ``StateGraph`` or compiled graph into a spec and check it.

LangGraph is an optional extra (``pip install corral[langgraph]``) and is never imported
here: its structures are read by attribute name. :func:`spec` reads one graph;
:func:`check` runs the rules that hold under LangGraph's semantics on it, and on every
graph it contains (subgraph nodes, and compiled graphs a node runs by hand); :func:`port`
writes a corral module skeleton for it.

>>> from typing import TypedDict
>>> from langgraph.graph import StateGraph, START, END
>>> class State(TypedDict):
...     n: int
>>> def step(state: State) -> dict[str, int]:
...     return {"n": state["n"] + 1}
>>> builder = StateGraph(State)
>>> _ = builder.add_node("step", step)
>>> _ = builder.add_edge(START, "step")
>>> _ = builder.add_edge("step", "step")
>>> [(d.code, d.nodes) for d in check(builder)]
[('CR105', ('step',)), ('CR201', ('step',))]
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from corral.analysis.diagnostic import Diagnostic
from corral.langgraph._port import port
from corral.langgraph._read import builder_of, read
from corral.langgraph._source import graphs_read, is_builder, is_compiled
from corral.spec import GraphSpec, Location

__all__ = ["check", "claim", "is_langgraph", "port", "spec"]


def is_langgraph(obj: object) -> bool:
    """Return whether ``obj`` is a LangGraph ``StateGraph`` or compiled graph."""
    return is_compiled(obj) or is_builder(obj)


def spec(graph: Any, name: str | None = None) -> GraphSpec:
    """Return the :class:`GraphSpec` of a LangGraph ``StateGraph`` or compiled graph.

    Raises:
        TypeError: ``graph`` is not a LangGraph graph.
    """
    return read(graph, name).spec


def check(graph: Any) -> list[Diagnostic]:
    """Return every finding on a LangGraph graph and the graphs it contains, sorted by place.

    Findings of a contained graph say so first (``in subgraph 'research': ...``).

    Raises:
        TypeError: ``graph`` is not a LangGraph graph.
    """
    return sorted(_check(graph, None, set()), key=lambda d: d.sort_key)


def _check(
    graph: Any, label: str | None, seen: set[int], where: Location | None = None
) -> list[Diagnostic]:
    # The analyser imports this package (to register CR109 and CR204), so it is read late.
    from corral.analysis import analyse
    from corral.analysis.rules.langgraph import langgraph_rules

    builder = builder_of(graph)
    seen.add(id(builder))
    reading = read(graph, where=where)
    found = analyse(reading.spec, langgraph_rules())
    if label is not None:
        found = [dataclasses.replace(d, message=f"in {label}: {d.message}") for d in found]
    contained = [(f"subgraph {name!r}", name, sub) for name, sub in reading.subgraphs]
    for node in reading.spec.nodes:
        by_hand = graphs_read(node.func)
        contained += [(f"graph {n!r} run by node {node.name!r}", node.name, g) for n, g in by_hand]
    for what, node_name, sub in contained:
        if id(sub.builder) not in seen:
            inner = what if label is None else f"{label}, {what}"
            at = reading.spec.node(node_name)
            found += _check(sub, inner, seen, at.location if at is not None else where)
    return found


def claim(diagnostic: Diagnostic) -> tuple[object, ...]:
    """Return what a finding claims, without saying through which graph it was found.

    A module that imports a compiled graph and also runs it as a subgraph finds the same
    defect twice (``in subgraph 'research': ...`` and on the graph itself); the command
    line prints one finding per claim.
    """
    message = _CONTAINED.sub("", diagnostic.message, count=1)
    return (diagnostic.code, diagnostic.file, diagnostic.line, diagnostic.nodes, message)


_CONTAINED = re.compile(r"^in (?:subgraph|graph) '[^']*'[^:]*: ")
