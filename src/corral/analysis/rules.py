"""Every rule of the analyser: one small function per code that yields findings.

A rule reads a :class:`~corral.analysis._graph.SpecGraph` and yields :class:`Finding` values;
it never raises. :func:`corral.analysis.analyse` runs them all, places each finding, applies
the ``ignore=`` suppressions and sorts the result.

Each defect is reported once, where it is: with no start node (CR102) nothing is reported
dead (CR103); a node whose way out is already reported (CR101, CR104, CR401) counts as
finishing for CR105, and so does every node that only leads to it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from corral.analysis._graph import SpecGraph
from corral.analysis.diagnostic import Severity
from corral.spec import END, START, Edge, GraphSpec, Guard, Location, NodeSpec, RouterSpec

__all__ = ["RULES", "Finding", "Rule", "rule"]


@dataclass(frozen=True)
class Finding:
    """One problem a rule found, before it is placed and turned into a ``Diagnostic``."""

    message: str
    nodes: tuple[str, ...] = ()
    """The nodes involved (an unknown name may appear too, for CR101 and CR108)."""
    location: Location | None = None
    """Where to point; ``None`` points at the first registered node, else at the graph."""
    site_ignore: tuple[str, ...] = ()
    """The ``ignore=`` prefixes of the router (or node) the finding is placed at."""


@dataclass(frozen=True)
class Rule:
    """A registered rule: its code, slug, severity and the function that checks it."""

    code: str
    slug: str
    severity: Severity
    check: Callable[[SpecGraph], Iterable[Finding]]

    @property
    def summary(self) -> str:
        """Return the first line of the rule function's docstring."""
        return (self.check.__doc__ or "").strip().splitlines()[0]


RULES: dict[str, Rule] = {}
"""Every rule by code, in code order."""

RuleFuncT = Callable[[SpecGraph], Iterable[Finding]]


def rule(code: str, slug: str, severity: Severity = "error") -> Callable[[RuleFuncT], RuleFuncT]:
    """Register the decorated function as the check for ``code``."""

    def register(func: RuleFuncT) -> RuleFuncT:
        if code in RULES:
            msg = f"rule code {code!r} is registered twice"
            raise ValueError(msg)
        RULES[code] = Rule(code, slug, severity, func)
        return func

    return register


# -- wording ------------------------------------------------------------------------------


def _join(parts: Iterable[str]) -> str:
    """Return ``a``, ``a and b`` or ``a, b and c``."""
    shown = list(parts)
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def _names(names: Iterable[str]) -> str:
    """Return ``'a'``, ``'a' and 'b'`` or ``'a', 'b' and 'c'``."""
    return _join(repr(n) for n in names)


def _close(name: str, candidates: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _fix_name(name: str, candidates: Iterable[str], kind: str = "node") -> str:
    match = _close(name, candidates)
    if match is not None:
        return f"fix the name (did you mean {match!r}?) or register a {kind} named {name!r}"
    return f"fix the name or register a {kind} named {name!r}"


def _show_type(tp: Any) -> str:
    if isinstance(tp, type) and not getattr(tp, "__args__", None):
        return tp.__qualname__
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


def _first_nodes(spec: GraphSpec) -> list[NodeSpec]:
    return [n for n in spec.nodes if spec.node(n.name) is n]


def _declarer(edge: Edge, graph: SpecGraph) -> NodeSpec | RouterSpec | None:
    """Return the router or node whose declaration holds ``edge``."""
    if edge.kind in ("router", "send", "otherwise"):
        for router in graph.routers_of(edge.source):
            if router.name == edge.owner and router.location == edge.location:
                return router
        if edge.kind != "otherwise":
            return None
    return graph.spec.node(edge.source)


def _route_owner(edge: Edge, graph: SpecGraph) -> str:
    if isinstance(_declarer(edge, graph), RouterSpec):
        return f"router {edge.owner!r}"
    return f"node {edge.owner!r}"


def _site_ignore(edge: Edge, graph: SpecGraph) -> tuple[str, ...]:
    declarer = _declarer(edge, graph)
    return declarer.ignore if declarer is not None else ()


# -- facts shared by rules ----------------------------------------------------------------


def _no_way_out(graph: SpecGraph, node: NodeSpec) -> bool:
    return not node.then and node.command is None and not graph.routers_of(node.name)


def _unreadable(graph: SpecGraph, node: NodeSpec) -> bool:
    if node.command is not None and node.command.names is None:
        return True
    return any(r.targets.names is None for r in graph.routers_of(node.name))


def _excused(graph: SpecGraph) -> set[str]:
    """Return the nodes whose way out is already reported (CR101, CR104, CR401)."""
    spec = graph.spec
    excused = {e.source for e in graph.unknown_targets if graph.is_node(e.source)}
    for node in _first_nodes(spec):
        if _no_way_out(graph, node) or _unreadable(graph, node):
            excused.add(node.name)
    return excused


@dataclass(frozen=True)
class _GuardSite:
    """A node or router that declares guards, with what its guards may count."""

    who: str
    """``node 'a'`` or ``router 'after_a'``, for messages."""
    source: str
    guards: tuple[Guard, ...]
    location: Location
    declared: tuple[str, ...] | None
    """The targets its own routes can take; ``None`` when its annotation is unreadable."""
    ignore: tuple[str, ...]
    is_node: bool


def _guard_sites(graph: SpecGraph) -> Iterator[_GuardSite]:
    """Yield every node and router that declares guards."""
    for node in _first_nodes(graph.spec):
        if node.guards:
            declared: tuple[str, ...] | None = node.then or ()
            if node.command is not None:
                names = node.command.names
                declared = None if names is None else (*(node.then or ()), *names)
            yield _GuardSite(
                f"node {node.name!r}",
                node.name,
                node.guards,
                node.location,
                declared,
                node.ignore,
                is_node=True,
            )
    for router in graph.spec.routers:
        if router.guards:
            yield _GuardSite(
                f"router {router.name!r}",
                router.source,
                router.guards,
                router.location,
                router.targets.names,
                router.ignore,
                is_node=False,
            )


# -- CR1xx: structure ---------------------------------------------------------------------


@rule("CR101", "unknown-node")
def unknown_nodes(graph: SpecGraph) -> Iterator[Finding]:
    """Report routes, router sources, guards and ``wait_for`` that name no node."""
    spec = graph.spec
    known = spec.names
    targets = (*known, END)
    for edge in graph.unknown_targets:
        who = _route_owner(edge, graph)
        if edge.kind == "otherwise":
            declarer = _declarer(edge, graph)
            guards = declarer.guards if declarer is not None else ()
            shown = [f"Guard({g.target!r})" for g in guards if g.otherwise == edge.target]
            verb = "fall back" if len(shown) > 1 else "falls back"
            what = f"{_join(shown) or 'a guard'} on {who} {verb} to {edge.target!r}"
        else:
            what = f"{who} routes to {edge.target!r}"
        yield Finding(
            f"{what}, which is not a node; {_fix_name(edge.target, targets)}",
            (edge.source, edge.target),
            edge.location,
            _site_ignore(edge, graph),
        )
    for router in spec.routers:
        if not graph.is_node(router.source):
            yield Finding(
                f"router {router.name!r} is registered for {router.source!r}, which is not a "
                f"node; {_fix_name(router.source, known)}",
                (router.source,),
                router.location,
                router.ignore,
            )
    for site in _guard_sites(graph):
        for guard in site.guards:
            if guard.target in targets or guard.target in (site.declared or ()):
                continue  # a known name, or an unknown route target reported above
            yield Finding(
                f"Guard({guard.target!r}) on {site.who} names {guard.target!r}, which is not "
                f"a node; {_fix_name(guard.target, targets)}",
                (site.source, guard.target),
                site.location,
                site.ignore,
            )
    for node in _first_nodes(spec):
        for waited in node.wait_for:
            if not graph.is_node(waited):
                yield Finding(
                    f"node {node.name!r} waits for {waited!r}, which is not a node; "
                    f"{_fix_name(waited, known)}",
                    (node.name, waited),
                )


@rule("CR102", "no-start")
def no_start(graph: SpecGraph) -> Iterator[Finding]:
    """Report a graph with no start node."""
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
    """Report nodes that no path from the start reaches."""
    spec = graph.spec
    if not any(node.start for node in spec.nodes):
        return  # CR102 says it once
    reachable = graph.reachable()
    if any(_unreadable(graph, spec_node) for n in reachable if (spec_node := spec.node(n))):
        return  # an unreadable route (CR401) may lead anywhere
    for name in spec.names:
        if name not in reachable:
            yield Finding(
                f"node {name!r} is not reachable from the start; route to it or remove it",
                (name,),
            )


@rule("CR104", "no-way-out")
def no_way_out(graph: SpecGraph) -> Iterator[Finding]:
    """Report nodes with no ``then=``, no router and no ``Command`` annotation."""
    spec = graph.spec
    for node in _first_nodes(spec):
        if _no_way_out(graph, node):
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
    """
    spec = graph.spec
    finishing = graph.finishing(_excused(graph))
    if any(node.start for node in spec.nodes):
        scope = graph.reachable()
    else:
        scope = set(spec.names)
    stuck = [n for n in spec.names if n in scope and n not in finishing]
    for group in graph.sink_components(stuck):
        if len(group) == 1:
            message = (
                f"no path from node {group[0]!r} reaches END; route it (or a node after it) "
                "to END, or give its guard otherwise=END"
            )
        else:
            message = (
                f"nodes {_names(group)} only route among themselves and never reach END; "
                "give one of them a route to END, or a guard with otherwise=END"
            )
        yield Finding(message, tuple(group))


@rule("CR106", "duplicate-node")
def duplicate_nodes(graph: SpecGraph) -> Iterator[Finding]:
    """Report node names registered more than once, or reserved for ``START``/``END``."""
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
    """Report nodes with more than one way out (``then=``, routers, ``Command``)."""
    spec = graph.spec
    for node in _first_nodes(spec):
        ways: list[str] = []
        if node.then:
            ways.append("then=")
        ways.extend(f"router {r.name!r}" for r in graph.routers_of(node.name))
        if node.command is not None:
            ways.append("a Command return annotation")
        if len(ways) > 1:
            yield Finding(
                f"node {node.name!r} has {len(ways)} ways out ({_join(ways)}); keep exactly one",
                (node.name,),
            )


@rule("CR108", "node-names")
def node_names(graph: SpecGraph) -> Iterator[Finding]:
    """Report disagreement between the ``nodes=`` ``Literal`` and the registered nodes."""
    spec = graph.spec
    if spec.node_names is None:
        return
    declared = set(spec.node_names)
    for name in spec.node_names:
        if not graph.is_node(name):
            yield Finding(
                f"the nodes= Literal names {name!r}, but no node {name!r} is registered; "
                "register it or remove it from the Literal",
                (name,),
                spec.location,
            )
    for name in spec.names:
        if name not in declared:
            yield Finding(
                f"node {name!r} is not in the nodes= Literal; add {name!r} to it",
                (name,),
                spec.location,
            )


# -- CR2xx: cycles ------------------------------------------------------------------------

_KIND_PREFERENCE = {"router": 0, "send": 0, "command": 1, "then": 2}


@rule("CR201", "unguarded-cycle")
def unguarded_cycles(graph: SpecGraph) -> Iterator[Finding]:
    """Report each group of cycles with no guarded route, with one witness cycle."""
    for component in graph.unguarded_components():
        path = graph.witness(component)
        shown = " → ".join([*path, path[0]])
        options: list[Edge] = []
        for i, source in enumerate(path):
            target = path[(i + 1) % len(path)]
            for route in graph.routes(source, target):
                if route.guard is None and route.kind in _KIND_PREFERENCE and route not in options:
                    options.append(route)
        others = [n for n in component if n not in path]
        tail = f"; {_names(others)} also loop with it" if others else ""
        if not options:
            yield Finding(
                f"cycle {shown} closes only through guards' otherwise routes, which cannot be "
                "guarded; send those guards' otherwise elsewhere (e.g. END)" + tail,
                tuple(path),
            )
            continue
        options.sort(
            key=lambda e: (_KIND_PREFERENCE[e.kind], e.target != path[0], path.index(e.source))
        )
        best = options[0]
        where = [f"{_route_owner(e, graph)} ({e.source} → {e.target})" for e in options]
        alternatives = f", or on {', '.join(where[1:])}" if len(where) > 1 else ""
        yield Finding(
            f"cycle {shown} has no guarded route, so only max_steps stops it; add a guard to "
            f"one of its routes, e.g. Guard({best.target!r}, max=3, otherwise=END) on "
            f"{where[0]}{alternatives}{tail}",
            tuple(path),
            best.location,
            _site_ignore(best, graph),
        )


@rule("CR202", "useless-guard", "warning")
def useless_guards(graph: SpecGraph) -> Iterator[Finding]:
    """Report guards on routes that are on no cycle, or that their owner cannot take."""
    for site in _guard_sites(graph):
        if graph.is_node(site.source):
            yield from _useless_guards_of(graph, site)


def _useless_guards_of(graph: SpecGraph, site: _GuardSite) -> Iterator[Finding]:
    source, who = site.source, site.who
    counted: set[str] = set()
    for guard in site.guards:
        nodes = (source, guard.target) if graph.is_node(guard.target) else (source,)
        place = (nodes, site.location, site.ignore)
        if guard.target in counted:
            yield Finding(
                f"{who} has more than one guard on its route to {guard.target!r}; keep one",
                *place,
            )
            continue
        counted.add(guard.target)
        if site.declared is None:
            continue  # CR401 already says the routes cannot be read
        if guard.target not in site.declared:
            if not graph.is_node(guard.target) and guard.target != END:
                continue  # CR101
            routers = graph.routers_of(source) if site.is_node else []
            if routers and not site.declared:
                yield Finding(
                    f"Guard({guard.target!r}) on {who} never counts: a node's guards apply to "
                    f"its then= and Command routes; move it to @g.router({source!r}, "
                    f"guards=[...]) on {routers[0].name!r}",
                    *place,
                )
                continue
            allowed = _names(site.declared) if site.declared else "no node"
            yield Finding(
                f"Guard({guard.target!r}) on {who} never counts: {who} cannot route to "
                f"{guard.target!r} (it routes to {allowed}); guard one of its routes or "
                "remove it",
                *place,
            )
        elif guard.target == END or not graph.on_cycle(source, guard.target):
            yield Finding(
                f"Guard({guard.target!r}) on {who} guards the route "
                f"{source} → {guard.target}, which is on no cycle; remove it (only cycles "
                "need guards; max_runs= caps a node)",
                *place,
            )


# -- CR3xx: state -------------------------------------------------------------------------


@rule("CR301", "parallel-write")
def parallel_writes(graph: SpecGraph) -> Iterator[Finding]:
    """Report keys without a reducer written by nodes that may run in the same superstep."""
    spec = graph.spec
    plain = {key.name for key in spec.keys if key.reducer is None}
    writes: dict[str, frozenset[str]] = {}
    for node in _first_nodes(spec):
        if node.writes is not None and node.writes & plain:
            writes[node.name] = node.writes & plain
    # Only a key two nodes write, or a key a Send target writes, can conflict; skip the
    # pair computation when there is none.
    sent = {t for r in spec.routers for t in r.targets.sends}
    sent |= {t for n in spec.nodes if n.command is not None for t in n.command.sends}
    writers: dict[str, int] = {}
    for keys in writes.values():
        for key in keys:
            writers[key] = writers.get(key, 0) + 1
    if not any(n > 1 for n in writers.values()) and not sent & set(writes):
        return
    involved: dict[str, set[str]] = {}
    repeated: dict[str, set[str]] = {}
    for a, b in graph.coactive_pairs():
        if a not in writes or b not in writes:
            continue
        for key in writes[a] & writes[b]:
            if a == b:
                repeated.setdefault(key, set()).add(a)
            else:
                involved.setdefault(key, set()).update((a, b))
    fix = "give the key a reducer (Annotated[list[str], operator.add]) or let one node write it"
    for key in [k.name for k in spec.keys]:
        if key in involved:
            nodes = graph.sort(involved[key])
            yield Finding(
                f"nodes {_names(nodes)} can run in the same superstep and all write {key!r}, "
                f"which has no reducer; {fix}",
                tuple(nodes),
            )
        for name in graph.sort(repeated.get(key, ())):
            yield Finding(
                f"node {name!r} can run several times in one superstep (Send) and writes "
                f"{key!r}, which has no reducer; {fix}",
                (name,),
            )


@rule("CR302", "unknown-key")
def unknown_keys(graph: SpecGraph) -> Iterator[Finding]:
    """Report nodes that write keys the state schema does not have."""
    spec = graph.spec
    keys = [k.name for k in spec.keys]
    for spec_node in _first_nodes(spec):
        if spec_node.writes is None:
            continue
        unknown = sorted(spec_node.writes - set(keys))
        if not unknown:
            continue
        hints = [m for name in unknown if (m := _close(name, keys)) is not None]
        hint = f" (did you mean {_names(hints)}?)" if hints else ""
        noun = "a key" if len(unknown) == 1 else "keys"
        which = "which is not" if len(unknown) == 1 else "which are not"
        yield Finding(
            f"node {spec_node.name!r} writes {_names(unknown)}, {which} {noun} of the state "
            f"schema; fix the name{hint} or add it to the state",
            (spec_node.name,),
        )


@rule("CR303", "update-schema")
def update_schema(graph: SpecGraph) -> Iterator[Finding]:
    """Report keys or value types where ``update_schema`` and ``state_schema`` differ."""
    spec = graph.spec
    if spec.update_keys is None:
        return
    update = {k.name: k for k in spec.update_keys}
    state = {k.name: k for k in spec.keys}
    for name, key in state.items():
        if name not in update:
            yield Finding(
                f"update_schema has no key {name!r}, which state_schema has; add it to "
                "update_schema",
                (),
                spec.location,
            )
        elif update[name].type != key.type:
            yield Finding(
                f"update_schema key {name!r} has type {_show_type(update[name].type)}, but "
                f"state_schema says {_show_type(key.type)}; make the types the same",
                (),
                spec.location,
            )
    for name in update:
        if name not in state:
            yield Finding(
                f"update_schema key {name!r} is not in state_schema; remove it or add it to "
                "the state",
                (),
                spec.location,
            )


# -- CR4xx: route typing ------------------------------------------------------------------


@rule("CR401", "untyped-route")
def untyped_routes(graph: SpecGraph) -> Iterator[Finding]:
    """Report routers and ``Command`` nodes whose annotation names no ``Literal`` targets."""
    spec = graph.spec
    for router in spec.routers:
        if router.targets.names is None:
            yield Finding(
                f"router {router.name!r} has no readable targets: {router.targets.problem}; "
                "annotate its return like -> Literal['a', 'b'] | End",
                (router.source,) if graph.is_node(router.source) else (),
                router.location,
                router.ignore,
            )
    for node in _first_nodes(spec):
        if node.command is not None and node.command.names is None:
            yield Finding(
                f"node {node.name!r} has no readable Command targets: {node.command.problem}; "
                "annotate its return like -> Command[Literal['a', 'b']]",
                (node.name,),
            )
