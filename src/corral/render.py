"""Draw a graph spec as Mermaid or Graphviz DOT text.

Both renderers read the same edge set, :meth:`corral.spec.GraphSpec.edges`, and draw each kind
of route the same way:

- a fixed route (``start=True``, ``then=``) is a solid arrow; a ``then=`` fan-out (every
  branch runs) is a thick arrow;
- a conditional route (a router or a ``Command``) is a dashed arrow; a router that returns a
  list (any subset of its targets runs) is labelled ``fan-out``; a ``Send`` route is labelled
  ``Send``;
- a guarded route carries its bound, ``≤3``, and the guard's ``otherwise`` route is a dotted
  arrow labelled ``revise used up`` (where the run goes once the route to ``revise`` has been
  taken 3 times); a guard with no ``otherwise`` says ``then error``.

>>> from typing import Literal, TypedDict
>>> from corral import END, End, Graph, Guard
>>> class State(TypedDict):
...     n: int
>>> g = Graph(State)
>>> @g.node(start=True)
... def work(state: State) -> None: ...
>>> @g.router("work", guards=[Guard("work", max=3, otherwise=END)])
... def again(state: State) -> Literal["work"] | End: ...
>>> print(render_mermaid(g.spec()))
flowchart TD
    __start__(["START"])
    work["work"]
    __end__(["END"])
    __start__ --> work
    work -.->|"≤3"| work
    work -.-> __end__
    work -.->|"work used up"| __end__
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from corral.spec import END, START, Edge, GraphSpec, Guard

__all__ = ["Taken", "expanded_children", "render_dot", "render_mermaid", "route_ends"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MERMAID_KEYWORDS = frozenset(
    {"end", "graph", "subgraph", "flowchart", "style", "class", "classdef", "click",
     "linkstyle", "direction", "default", "call", "href"}
)  # fmt: skip


@dataclass(frozen=True)
class _Arrow:
    """How one route is drawn, independent of the output language."""

    source: str
    target: str
    label: str
    line: str
    """``solid``, ``thick``, ``dashed`` or ``dotted``."""
    taken: bool = False
    """One thread took this route (drawn emphasised)."""


@dataclass(frozen=True)
class Taken:
    """What one thread did, to draw over its graph (``corral draw --thread``)."""

    routes: Mapping[tuple[str, str, bool], int]
    """How many times each route ``(source, target, otherwise)`` was taken (``START`` and
    ``END`` at the ends; ``otherwise`` is true for a guard's fallback route)."""
    guards: Mapping[tuple[str, str], int]
    """Each guard's count at the thread's newest checkpoint, by guarded route."""


def _overlay(drawing: _Drawing, taken: Taken | None) -> _Drawing:
    """Return ``drawing`` with the taken routes marked and labelled ``×N`` and guard counts."""
    if taken is None:
        return drawing
    arrows = []
    for arrow in drawing.arrows:
        key = (arrow.source, arrow.target)
        parts = arrow.label.split(" ") if arrow.label else []
        count = taken.routes.get((*key, arrow.line == "dotted"), 0)
        used = taken.guards.get(key)
        if used is not None:
            parts = [f"{used}/{p[1:]} used" if p.startswith("≤") else p for p in parts]
        if count:
            parts.append(f"×{count}")
        arrows.append(replace(arrow, label=" ".join(parts), taken=count > 0))
    return replace(drawing, arrows=tuple(arrows))


@dataclass(frozen=True)
class _Box:
    """One drawn node; ``name`` is unique in the whole drawing (a path inside subgraphs)."""

    name: str
    label: str
    shape: str
    """``box``, ``oval`` (START and END) or ``subgraph`` (a collapsed child graph)."""


@dataclass(frozen=True)
class _Cluster:
    """A child graph drawn inside its parent: a Mermaid ``subgraph`` block or a DOT cluster."""

    name: str
    label: str
    items: tuple[_Box | _Cluster, ...]


@dataclass(frozen=True)
class _Drawing:
    """What both languages draw: boxes and clusters, arrows, and joins as comments."""

    items: tuple[_Box | _Cluster, ...]
    arrows: tuple[_Arrow, ...]
    notes: tuple[tuple[str, tuple[str, ...]], ...]
    """``(join, waited-for nodes)`` for each ``wait_for`` join, by drawn name."""


def render_mermaid(
    spec: GraphSpec,
    *,
    collapse: bool = False,
    taken: Taken | None = None,
    bound: str | None = None,
) -> str:
    """Return the graph as a Mermaid ``flowchart`` (paste it into Markdown or mermaid.live).

    A subgraph's child is drawn as a ``subgraph`` block holding its own nodes, entered at
    its ``START`` and left from its ``END``; with ``collapse=True`` it is one node. With
    ``taken`` (what one thread did), the routes it took are drawn thick and red, labelled
    with how many times, and each guard's count is shown against its max. ``bound`` (the
    graph's bound in words, ``g.bound().summary``) goes in the title, after the graph's name.
    """
    drawing = _overlay(_draw(spec, collapse), taken)
    ids = _mermaid_ids(_all_names(drawing.items))
    lines: list[str] = []
    title = _title(spec, bound)
    if title:
        # a YAML double-quoted string: JSON's escapes are YAML's
        lines += ["---", f"title: {json.dumps(title, ensure_ascii=False)}", "---"]
    lines.append("flowchart TD")
    lines.extend(_mermaid_items(drawing.items, ids, "    "))
    arrows = {"solid": "-->", "thick": "==>", "dashed": "-.->", "dotted": "-.->"}
    for arrow in drawing.arrows:
        link = arrows[arrow.line]
        label = f'|"{_mermaid_text(arrow.label)}"|' if arrow.label else ""
        lines.append(f"    {ids[arrow.source]} {link}{label} {ids[arrow.target]}")
    for join, waited in drawing.notes:
        lines.append(f"    %% {join} waits for {', '.join(waited)}")
    for index, arrow in enumerate(drawing.arrows):
        if arrow.taken:
            lines.append(f"    linkStyle {index} stroke:#d62728,stroke-width:3px")
    return "\n".join(lines)


def _mermaid_items(items: tuple[_Box | _Cluster, ...], ids: dict[str, str], pad: str) -> list[str]:
    lines: list[str] = []
    shapes = {"oval": '(["{}"])', "box": '["{}"]', "subgraph": '[["{}"]]'}
    for item in items:
        if isinstance(item, _Cluster):
            lines.append(f'{pad}subgraph {ids[item.name]}["{_mermaid_text(item.label)}"]')
            lines.extend(_mermaid_items(item.items, ids, pad + "    "))
            lines.append(f"{pad}end")
        else:
            shape = shapes[item.shape].format(_mermaid_text(item.label))
            lines.append(f"{pad}{ids[item.name]}{shape}")
    return lines


def render_dot(
    spec: GraphSpec,
    *,
    collapse: bool = False,
    taken: Taken | None = None,
    bound: str | None = None,
) -> str:
    """Return the graph as Graphviz DOT text (``corral draw x.py --format dot | dot -Tsvg``).

    A subgraph's child is drawn as a cluster; with ``collapse=True`` it is one node.
    ``bound`` (``g.bound().summary``) is drawn as the graph's label, with its name.

    >>> from typing import TypedDict
    >>> from corral import Graph
    >>> class State(TypedDict):
    ...     n: int
    >>> g = Graph(State, name="tiny")
    >>> @g.node(start=True, then="__end__")
    ... def only(state: State) -> None: ...
    >>> print(render_dot(g.spec()))
    digraph "tiny" {
        node [shape=box, style=rounded];
        "__start__" [label="START", shape=oval];
        "only" [label="only"];
        "__end__" [label="END", shape=oval];
        "__start__" -> "only";
        "only" -> "__end__";
    }
    """
    drawing = _overlay(_draw(spec, collapse), taken)
    title = _dot_text(spec.name or "corral")
    lines = [f'digraph "{title}" {{']
    if bound is not None:
        lines.append(f'    label="{_dot_text(_title(spec, bound))}";')
        lines.append("    labelloc=t;")
    lines.append("    node [shape=box, style=rounded];")
    lines.extend(_dot_items(drawing.items, "    "))
    styles = {
        "solid": "",
        "thick": "penwidth=2",
        "dashed": "style=dashed",
        "dotted": "style=dotted",
    }
    for arrow in drawing.arrows:
        attrs = [styles[arrow.line]] if styles[arrow.line] else []
        if arrow.taken:
            attrs.append('color="#d62728", penwidth=3')
        if arrow.label:
            attrs.append(f'label="{_dot_text(arrow.label)}"')
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f'    "{_dot_text(arrow.source)}" -> "{_dot_text(arrow.target)}"{suffix};')
    for join, waited in drawing.notes:
        lines.append(f"    // {_dot_text(join)} waits for {', '.join(waited)}")
    lines.append("}")
    return "\n".join(lines)


def _dot_items(items: tuple[_Box | _Cluster, ...], pad: str) -> list[str]:
    lines: list[str] = []
    shapes = {"oval": ", shape=oval", "box": "", "subgraph": ", peripheries=2"}
    for item in items:
        if isinstance(item, _Cluster):
            lines.append(f'{pad}subgraph "cluster_{_dot_text(item.name)}" {{')
            lines.append(f'{pad}    label="{_dot_text(item.label)}";')
            lines.extend(_dot_items(item.items, pad + "    "))
            lines.append(f"{pad}}}")
        else:
            label = _dot_text(item.label)
            lines.append(f'{pad}"{_dot_text(item.name)}" [label="{label}"{shapes[item.shape]}];')
    return lines


def _draw(spec: GraphSpec, collapse: bool, prefix: str = "") -> _Drawing:
    """Lay ``spec`` out, its children expanded unless ``collapse``; names get ``prefix``."""
    expanded = expanded_children(spec, collapse)
    items: list[_Box | _Cluster] = []
    arrows: list[_Arrow] = []
    inner_arrows: list[_Arrow] = []
    notes: list[tuple[str, tuple[str, ...]]] = []
    for name in _node_names(spec):
        label = _node_label(spec, name)
        if name in expanded:
            inner = _draw(expanded[name], collapse, f"{prefix}{name}/")
            items.append(_Cluster(prefix + name, label, inner.items))
            inner_arrows.extend(inner.arrows)
            notes.extend(inner.notes)
            continue
        found = spec.node(name)
        shape = "oval" if name in (START, END) else "box"
        if found is not None and found.subgraph is not None:
            shape = "subgraph"
        items.append(_Box(prefix + name, label, shape))

    # each arrow once: several guards falling back to one node draw one arrow
    for arrow in dict.fromkeys(_arrow(spec, edge) for edge in spec.edges()):
        source, target = route_ends(arrow.source, arrow.target, prefix, expanded)
        arrows.append(_Arrow(source, target, arrow.label, arrow.line))
    for node in spec.nodes:
        if node.wait_for:
            notes.append((prefix + node.name, tuple(prefix + w for w in node.wait_for)))
    return _Drawing(tuple(items), (*arrows, *inner_arrows), tuple(notes))


def expanded_children(spec: GraphSpec, collapse: bool) -> dict[str, GraphSpec]:
    """Return the child graph of each subgraph node drawn expanded (none with ``collapse``)."""
    if collapse:
        return {}
    return {
        node.name: node.subgraph.graph
        for node in spec.nodes
        if node.subgraph is not None and spec.node(node.name) is node
    }


def route_ends(
    source: str, target: str, prefix: str, expanded: Mapping[str, GraphSpec]
) -> tuple[str, str]:
    """Return the drawn names of a route's ends under ``prefix``: a route out of (into) an
    expanded subgraph leaves its ``END`` (enters its ``START``)."""
    return (
        f"{prefix}{source}/{END}" if source in expanded else prefix + source,
        f"{prefix}{target}/{START}" if target in expanded else prefix + target,
    )


def _title(spec: GraphSpec, bound: str | None) -> str:
    """Return the graph's name and its bound, as drawn in the title."""
    return " — ".join(part for part in (spec.name, bound) if part)


def _all_names(items: tuple[_Box | _Cluster, ...]) -> list[str]:
    names: list[str] = []
    for item in items:
        names.append(item.name)
        if isinstance(item, _Cluster):
            names.extend(_all_names(item.items))
    return names


def _node_names(spec: GraphSpec) -> list[str]:
    """Return every node to draw: START, the nodes, unknown route targets, then END."""
    edges = list(spec.edges())
    names: list[str] = []
    if any(e.source == START for e in edges):
        names.append(START)
    names.extend(spec.names)
    for edge in edges:
        for name in (edge.source, edge.target):
            if name not in names and name != END:
                names.append(name)
    if any(e.target == END for e in edges):
        names.append(END)
    return names


def _node_label(spec: GraphSpec, name: str) -> str:
    if name == START:
        return "START"
    if name == END:
        return "END"
    node = spec.node(name)
    if node is None:
        return f"{name} (unknown)"
    if node.max_runs is not None:
        return f"{name} (max {node.max_runs} runs)"
    return name


def _arrow(spec: GraphSpec, edge: Edge) -> _Arrow:
    parts: list[str] = []
    if edge.kind in ("start", "then"):
        line = "thick" if edge.many else "solid"
    elif edge.kind == "otherwise":
        line = "dotted"
        used_up = [g.target for g in _guards_of(spec, edge) if g.otherwise == edge.target]
        parts.append(", ".join(dict.fromkeys(used_up)) + " used up")
    else:
        line = "dashed"
        if edge.kind == "send":
            parts.append("Send")
        elif edge.many:
            parts.append("fan-out")
    if edge.guard is not None:
        parts.append(f"≤{edge.guard.max}")
        if edge.guard.otherwise is None:
            parts.append("then error")
    return _Arrow(edge.source, edge.target, " ".join(parts), line)


def _guards_of(spec: GraphSpec, edge: Edge) -> tuple[Guard, ...]:
    """Return the guards declared by whoever declared ``edge`` (its router or node)."""
    for router in spec.routers_of(edge.source):
        if router.name == edge.owner:
            return router.guards
    node = spec.node(edge.source)
    return node.guards if node is not None else ()


def _mermaid_ids(names: list[str]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for index, name in enumerate(names):
        plain = (
            _IDENTIFIER.fullmatch(name)
            and name.lower() not in _MERMAID_KEYWORDS
            and not (name.startswith("__") and name not in (START, END))
        )
        ids[name] = name if plain else f"n{index}"
    return ids


def _mermaid_text(text: str) -> str:
    return text.replace("#", "#35;").replace('"', "#quot;")


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
