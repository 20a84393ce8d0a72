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
from typing import Any

from corral.analysis.diagnostic import Diagnostic
from corral.langgraph._port import port
from corral.langgraph._read import builder_of, read
from corral.langgraph._source import graphs_read, is_builder, is_compiled
from corral.spec import GraphSpec

__all__ = ["check", "is_langgraph", "port", "spec"]


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


def _check(graph: Any, label: str | None, seen: set[int]) -> list[Diagnostic]:
    # The analyser imports this package (to register CR109 and CR204), so it is read late.
    from corral.analysis import analyse
    from corral.analysis.rules.langgraph import APPLIES, REWORDED, langgraph_findings

    builder = builder_of(graph)
    seen.add(id(builder))
    reading = read(graph)
    found = [d for d in analyse(reading.spec) if d.code in APPLIES and d.code not in REWORDED]
    found += langgraph_findings(reading.spec)
    if label is not None:
        found = [dataclasses.replace(d, message=f"in {label}: {d.message}") for d in found]
    contained = [(f"subgraph {name!r}", sub) for name, sub in reading.subgraphs]
    for node in reading.spec.nodes:
        by_hand = graphs_read(node.func)
        contained += [(f"graph {name!r} run by node {node.name!r}", g) for name, g in by_hand]
    for what, sub in contained:
        if id(sub.builder) not in seen:
            inner = what if label is None else f"{label}, {what}"
            found += _check(sub, inner, seen)
    return found
