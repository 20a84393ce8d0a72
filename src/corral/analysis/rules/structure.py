"""CR1xx: the structure of the graph (names, start, reachability, ways out)."""

from __future__ import annotations

from collections.abc import Iterator

from corral.analysis._graph import SpecGraph
from corral.analysis.rules._base import (
    Finding,
    close_match,
    declaration_of,
    excused_nodes,
    fix_name,
    guard_sites,
    has_no_way_out,
    join_words,
    quote_names,
    route_owner,
    routes_unresolved,
    rule,
    site_ignore,
    stray_router_owners,
)
from corral.spec import END, START


@rule("CR101", "unknown-node")
def unknown_nodes(graph: SpecGraph) -> Iterator[Finding]:
    """Report routes, router sources, guards and ``wait_for`` that name no node.

    A route names a node that was never registered, usually a typo in `then=`, a router's
    `Literal[...]` annotation, `@g.router("source")`, a `Guard` target or `wait_for=`.
    The run would fail the first time it took that route.

    Fix: correct the name, or register the missing node. Passing `nodes=Literal[...]` to
    `Graph` lets mypy catch the typo too.
    """
    spec = graph.spec
    known = graph.names
    targets = (*known, END)
    target_set = {*targets}  # a tuple lookup per guard made this rule quadratic
    for edge in graph.unknown_targets:
        who = route_owner(edge, graph)
        if edge.kind == "otherwise":
            declarer = declaration_of(edge, graph)
            guards = declarer.guards if declarer is not None else ()
            shown = [f"Guard({g.target!r})" for g in guards if g.otherwise == edge.target]
            verb = "fall back" if len(shown) > 1 else "falls back"
            what = f"{join_words(shown) or 'a guard'} on {who} {verb} to {edge.target!r}"
        else:
            what = f"{who} routes to {edge.target!r}"
        yield Finding(
            f"{what}, which is not a node; {fix_name(edge.target, targets)}",
            (edge.source, edge.target),
            edge.location,
            site_ignore(edge, graph),
        )
    for router in spec.routers:
        starts = (router.source, spec.framework) == (START, "langgraph")  # a LangGraph entry router
        if not graph.is_node(router.source) and not starts:
            yield Finding(
                f"router {router.name!r} is registered for {router.source!r}, which is not a "
                f"node; {fix_name(router.source, known)}",
                (router.source,),
                router.location,
                router.ignore,
            )
    for site in guard_sites(graph):
        for guard in site.guards:
            if guard.target in target_set or guard.target in (site.declared or ()):
                continue  # a known name, or an unknown route target reported above
            yield Finding(
                f"Guard({guard.target!r}) on {site.who} names {guard.target!r}, which is not "
                f"a node; {fix_name(guard.target, targets)}",
                (site.source, guard.target),
                site.location,
                site.ignore,
            )
    for node in graph.nodes:
        for waited in node.wait_for:
            if not graph.is_node(waited):
                yield Finding(
                    f"node {node.name!r} waits for {waited!r}, which is not a node; "
                    f"{fix_name(waited, known)}",
                    (node.name, waited),
                )


@rule("CR102", "no-start")
def no_start(graph: SpecGraph) -> Iterator[Finding]:
    """Report a graph with no start node.

    No node was registered with `start=True`, so a run has nowhere to begin. Reported once,
    at the line that created the `Graph` (and no node is reported as dead because of it).

    Fix: mark the first node `@g.node(start=True, ...)`.
    """
    spec = graph.spec
    if any(node.start for node in spec.nodes):
        return
    if not spec.nodes:
        message = "the graph has no nodes; register one with @g.node(start=True, then=...)"
    else:
        message = (
            "the graph has no start node; pass start=True to the node the run begins with, "
            f"e.g. @g.node(start=True) on {spec.nodes[0].name!r}"
        )
    yield Finding(message, (), spec.location)


@rule("CR103", "dead-node")
def dead_nodes(graph: SpecGraph) -> Iterator[Finding]:
    """Report nodes that no path from the start reaches.

    No path of routes (fixed, conditional, Command, Send or a guard's `otherwise`) leads
    from a start node to this node, so it can never run.

    Fix: route to it (add it to a router's `Literal`, a `then=`) or remove it.
    """
    spec = graph.spec
    if not any(node.start for node in spec.nodes):
        return  # CR102 says it once
    if routes_unresolved(graph):
        return  # a misspelt (CR101) or unreadable (CR401) route may lead anywhere
    reachable = graph.reachable(repaired=True)
    for name in graph.names:
        if name not in reachable:
            yield Finding(
                f"node {name!r} is not reachable from the start; route to it or remove it",
                (name,),
            )


@rule("CR104", "no-way-out")
def no_way_out(graph: SpecGraph) -> Iterator[Finding]:
    """Report nodes with no ``then=``, no router and no ``Command`` annotation.

    Every node needs exactly one way out. This one has no `then=`, no router registered for
    it and no `Command[Literal[...]]` return annotation, so the run would stop there.

    Fix: add `then=END` (or the next node), register a `@g.router("node")`, or return a
    `Command` with its targets in the annotation.
    """
    owners = stray_router_owners(graph)
    for node in graph.nodes:
        if owners is None or node.name in owners:
            continue  # a router registered for a misspelt name (CR101) may be its way out
        if has_no_way_out(graph, node):
            yield Finding(
                f"node {node.name!r} has no way out; give it then= (a node or END), "
                f"a router (@g.router({node.name!r})) or a Command[Literal[...]] return "
                "annotation",
                (node.name,),
            )


@rule("CR105", "cannot-finish")
def cannot_finish(graph: SpecGraph) -> Iterator[Finding]:
    """Report where a run gets stuck: nodes from which no path reaches ``END``.

    Only the bottom of each stuck region is reported (a node, or a loop of nodes, whose
    every route stays among nodes that cannot finish); the nodes leading into it are fine
    once it is fixed. Dead nodes are left to CR103 unless the graph has no start at all.

    Every path from this node loops among nodes that never route to `END`, so a run that
    gets here can only stop at a cap.

    Fix: give one of the nodes on those paths a route to `END` (a guard's `otherwise=END`
    counts).
    """
    spec = graph.spec
    finishing = graph.finishing(excused_nodes(graph))
    if any(node.start for node in spec.nodes):
        scope = graph.reachable()
    else:
        scope = set(graph.names)
    stuck = [n for n in graph.names if n in scope and n not in finishing]
    for group in graph.sink_components(stuck):
        if len(group) == 1:
            message = (
                f"no path from node {group[0]!r} reaches END; route it (or a node after it) "
                "to END, or give its guard otherwise=END"
            )
        else:
            message = (
                f"nodes {quote_names(group)} only route among themselves and never reach END; "
                "give one of them a route to END, or a guard with otherwise=END"
            )
        yield Finding(message, tuple(group))


@rule("CR106", "duplicate-node")
def duplicate_nodes(graph: SpecGraph) -> Iterator[Finding]:
    """Report node names registered more than once, or reserved for ``START``/``END``.

    Two functions were registered under the same node name (the function name, or `name=`).
    Routes to that name would be ambiguous.

    Fix: rename one of them, or pass a distinct `name=` to its decorator.
    """
    seen: dict[str, int] = {}
    for node in graph.spec.nodes:
        seen[node.name] = seen.get(node.name, 0) + 1
        if node.name in (START, END):
            if seen[node.name] == 1:
                yield Finding(
                    f"node name {node.name!r} is reserved for "
                    f"{'START' if node.name == START else 'END'}; give the node another name",
                    (node.name,),
                    node.location,
                )
        elif seen[node.name] == 2:
            yield Finding(
                f"node {node.name!r} is registered more than once; give each a distinct name "
                "with @g.node(name=...)",
                (node.name,),
                node.location,
            )


@rule("CR107", "mixed-routing")
def mixed_routing(graph: SpecGraph) -> Iterator[Finding]:
    """Report nodes with more than one way out (``then=``, routers, ``Command``).

    A node has `then=` and a router, two routers, or returns `Command` and also has `then=`
    or a router. Which route wins would depend on the order of evaluation.

    Fix: keep one way out: fold the choice into a single router, or route only through the
    node's `Command`.
    """
    for node in graph.nodes:
        ways: list[str] = []
        if node.then:
            ways.append("then=")
        ways.extend(f"router {r.name!r}" for r in graph.spec.routers_of(node.name))
        if node.command is not None:
            ways.append("a Command return annotation")
        if len(ways) > 1:
            yield Finding(
                f"node {node.name!r} has {len(ways)} ways out ({join_words(ways)}); "
                "keep exactly one",
                (node.name,),
            )


@rule("CR108", "node-names")
def node_names(graph: SpecGraph) -> Iterator[Finding]:
    """Report disagreement between the ``nodes=`` ``Literal`` and the registered nodes.

    `Graph(State, Update, Nodes)` was given a `Literal` of node names for mypy to check
    routes against, but the registered nodes are not exactly those names.

    A name in the `Literal` close to a registered node it leaves out is one misspelling,
    reported once.

    Fix: add the missing names to the `Literal`, or remove the ones no node has.
    """
    spec = graph.spec
    if spec.node_names is None:
        return
    declared = set(spec.node_names)
    misspelt = _misspelt_in_literal(graph, spec.node_names)
    for name in spec.node_names:
        if name in misspelt:
            yield Finding(
                f"the nodes= Literal names {name!r}, which is no node, and leaves out node "
                f"{misspelt[name]!r}; fix the name in the Literal (did you mean "
                f"{misspelt[name]!r}?)",
                (name,),
                spec.location,
            )
        elif not graph.is_node(name):
            yield Finding(
                f"the nodes= Literal names {name!r}, but no node {name!r} is registered; "
                "register it or remove it from the Literal",
                (name,),
                spec.location,
            )
    for name in graph.names:
        if name not in declared and name not in misspelt.values():
            yield Finding(
                f"node {name!r} is not in the nodes= Literal; add {name!r} to it",
                (name,),
                spec.location,
            )


def _misspelt_in_literal(graph: SpecGraph, literal: tuple[str, ...]) -> dict[str, str]:
    """Return the ``nodes=`` names that misspell a registered node the ``Literal`` leaves out.

    One typo in the ``Literal`` is one finding, not a missing name plus an unknown one.
    """
    declared = set(literal)
    left_out = [n for n in graph.spec.names if n not in declared]
    found: dict[str, str] = {}
    for name in literal:
        if graph.is_node(name):
            continue
        match = close_match(name, [n for n in left_out if n not in found.values()])
        if match is not None:
            found[name] = match
    return found
