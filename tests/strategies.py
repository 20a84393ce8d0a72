"""Hypothesis strategies: random graph specs (shared by the analyser's property tests).

A generated :class:`~corral.spec.GraphSpec` has nodes ``n0``, ``n1``, ...; each node has
exactly one way out (``then=``, a router, or a ``Command`` annotation) or, sometimes, none;
routes go to nodes or ``END``, some carry a guard whose ``otherwise`` is ``None``, ``END``
or a node. No name is unknown and every annotation is readable.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from corral.spec import END, GraphSpec, Guard, KeySpec, Location, NodeSpec, RouterSpec, TargetSet

__all__ = ["graph_specs", "node_names"]

FILE = "generated.py"


def _node_func(state: Any) -> None:
    """Stand-in for a generated node: writes nothing."""


def _router_func(state: Any) -> str:
    """Stand-in for a generated router."""
    return END


def node_names(count: int) -> list[str]:
    """Return the names of a generated graph's nodes."""
    return [f"n{i}" for i in range(count)]


@st.composite
def graph_specs(
    draw: st.DrawFn,
    *,
    max_nodes: int = 7,
    max_routes: int = 3,
    allow_no_way_out: bool = True,
) -> GraphSpec:
    """Draw a random graph spec: start flags, routes, fan-outs, guards and otherwise routes."""
    count = draw(st.integers(1, max_nodes))
    names = node_names(count)
    targets = [*names, END]
    ways = ["then", "router", "command", "many"] + (["none"] if allow_no_way_out else [])
    nodes: list[NodeSpec] = []
    routers: list[RouterSpec] = []
    for index, name in enumerate(names):
        location = Location(FILE, index * 10 + 1, 1)
        way = draw(st.sampled_from(ways))
        outs = tuple(
            draw(st.lists(st.sampled_from(targets), min_size=1, max_size=max_routes, unique=True))
        )
        guards: list[Guard] = []
        for target in outs:
            if target != END and draw(st.booleans()):
                otherwise = draw(st.sampled_from([None, END, *names]))
                guards.append(Guard(target, max=draw(st.integers(1, 3)), otherwise=otherwise))
        start = draw(st.integers(0, 9)) > 0 if index == 0 else draw(st.integers(0, 4)) == 0
        if way in ("router", "many"):
            nodes.append(NodeSpec(name, _node_func, location, start=start, writes=frozenset()))
            routers.append(
                RouterSpec(
                    name,
                    f"route_{name}",
                    _router_func,
                    Location(FILE, index * 10 + 5, 1),
                    TargetSet(outs, many=way == "many"),
                    guards=tuple(guards),
                )
            )
        elif way == "then":
            nodes.append(
                NodeSpec(
                    name,
                    _node_func,
                    location,
                    start=start,
                    then=outs,
                    guards=tuple(guards),
                    writes=frozenset(),
                )
            )
        elif way == "command":
            nodes.append(
                NodeSpec(
                    name,
                    _node_func,
                    location,
                    start=start,
                    command=TargetSet(outs),
                    guards=tuple(guards),
                    writes=frozenset(),
                )
            )
        else:
            nodes.append(NodeSpec(name, _node_func, location, start=start, writes=frozenset()))
    return GraphSpec(
        name="generated",
        location=Location(FILE, 0, 1),
        keys=(KeySpec("x", int),),
        nodes=tuple(nodes),
        routers=tuple(routers),
    )
