"""Property tests: the analyser's verdicts equal a brute-force walk on random graphs.

The walks here read the spec's fields directly (not ``GraphSpec.edges`` or networkx), so
they check the analyser's graph building as well as its algorithms.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

from hypothesis import given, settings
from strategies import graph_specs

from corral.analysis import analyse, list_cycles
from corral.analysis._graph import SpecGraph
from corral.analysis._supersteps import coactive_pairs
from corral.spec import END, GraphSpec, Guard

SETTINGS = settings(max_examples=300, deadline=None)

Route = tuple[str, str, bool]  # source, target, guarded


def routes(spec: GraphSpec) -> list[Route]:
    """Return every route as ``(source, target, guarded)``, otherwise routes included."""
    found: list[Route] = []

    def declare(source: str, outs: tuple[str, ...], guards: tuple[Guard, ...]) -> None:
        guarded = {g.target for g in guards}
        for target in outs:
            found.append((source, target, target in guarded))
        for guard in guards:
            if guard.otherwise is not None:
                found.append((source, guard.otherwise, False))

    for node in spec.nodes:
        if node.then is not None:
            declare(node.name, node.then, node.guards)
        if node.command is not None and node.command.names is not None:
            declare(node.name, node.command.names, node.guards)
    for router in spec.routers:
        declare(router.source, router.targets.names or (), router.guards)
    return found


def walk(start: set[str], succ: dict[str, set[str]]) -> set[str]:
    seen = set(start)
    stack = list(start)
    while stack:
        for nxt in succ.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def successors(spec: GraphSpec, *, unguarded_only: bool = False) -> dict[str, set[str]]:
    succ: dict[str, set[str]] = {n.name: set() for n in spec.nodes}
    for source, target, guarded in routes(spec):
        if not (unguarded_only and guarded):
            succ[source].add(target)
    return succ


def no_way_out(spec: GraphSpec) -> set[str]:
    with_router = {r.source for r in spec.routers}
    return {
        n.name for n in spec.nodes if not n.then and n.command is None and n.name not in with_router
    }


def findings(spec: GraphSpec, code: str) -> list[tuple[str, ...]]:
    return [d.nodes for d in analyse(spec) if d.code == code]


@SETTINGS
@given(graph_specs())
def test_dead_nodes_match_walk(spec: GraphSpec) -> None:
    """CR103 names exactly the nodes a walk from the start nodes does not reach."""
    starts = {n.name for n in spec.nodes if n.start}
    reached = walk(starts, successors(spec))
    expected = {n.name for n in spec.nodes if n.name not in reached} if starts else set()
    assert {nodes[0] for nodes in findings(spec, "CR103")} == expected
    assert len(findings(spec, "CR102")) == (0 if starts else 1)


@SETTINGS
@given(graph_specs())
def test_cannot_finish_matches_walk(spec: GraphSpec) -> None:
    """CR105 reports the stuck nodes' sinks; every stuck node leads into a reported group."""
    succ = successors(spec)
    excused = no_way_out(spec)
    starts = {n.name for n in spec.nodes if n.start}
    scope = walk(starts, succ) if starts else {n.name for n in spec.nodes}
    stuck = {
        n.name
        for n in spec.nodes
        if n.name in scope and not (walk({n.name}, succ) & (excused | {END}))
    }
    groups = [set(nodes) for nodes in findings(spec, "CR105")]
    reported = set().union(*groups)
    assert reported <= stuck
    for group in groups:
        for node in group:  # a group is closed: it never routes out of itself
            assert succ[node] <= group
            assert walk({node}, succ) >= group
    for node in stuck:
        assert walk({node}, succ) & reported


@SETTINGS
@given(graph_specs())
def test_unguarded_cycles_match_walk(spec: GraphSpec) -> None:
    """CR201 fires for every group of unguarded cycles, each finding a real unguarded cycle.

    (That the routes it picks cut every cycle, and are fewest, is checked on the cutting
    algorithm itself in test_cycle_cuts.py.)
    """
    free = successors(spec, unguarded_only=True)
    nodes = [n.name for n in spec.nodes]
    on_cycle = {n for n in nodes if n in walk(free[n], free)}
    groups = {
        frozenset(m for m in on_cycle if m in walk({n}, free) and n in walk({m}, free))
        for n in on_cycle
    }
    witnesses = findings(spec, "CR201")
    assert len(witnesses) >= len(groups)
    seen_groups = set()
    for path in witnesses:
        for i, source in enumerate(path):
            assert path[(i + 1) % len(path)] in free[source]
        assert len(set(path)) == len(path)
        (group,) = [g for g in groups if path[0] in g]
        assert set(path) <= group
        seen_groups.add(group)
    assert seen_groups == groups


def elementary_cycles(succ: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Return every elementary cycle, rotated to start at its smallest node name."""
    found: set[tuple[str, ...]] = set()

    def extend(path: list[str]) -> Iterator[tuple[str, ...]]:
        for nxt in succ.get(path[-1], ()):
            if nxt == path[0]:
                yield tuple(path)
            elif nxt not in path and nxt > path[0] and nxt in succ:
                yield from extend([*path, nxt])

    for node in succ:
        found.update(extend([node]))
    return found


def rotate(cycle: tuple[str, ...]) -> tuple[str, ...]:
    i = cycle.index(min(cycle))
    return cycle[i:] + cycle[:i]


@SETTINGS
@given(graph_specs(max_nodes=6))
def test_list_cycles_matches_enumeration(spec: GraphSpec) -> None:
    """g.cycles() lists every elementary cycle once, unguarded ones first, and says when cut."""
    succ = {n: {t for t in ts if t != END} for n, ts in successors(spec).items()}
    free = {
        n: {t for t in ts if t != END} for n, ts in successors(spec, unguarded_only=True).items()
    }
    expected = elementary_cycles(succ)
    unguarded = elementary_cycles(free)
    listed = list_cycles(spec, limit=10_000)
    assert not listed.truncated
    assert sorted(rotate(c.nodes) for c in listed) == sorted(expected)
    kinds = [rotate(c.nodes) in unguarded for c in listed]
    assert kinds == sorted(kinds, reverse=True)
    if len(expected) > 1:
        cut = list_cycles(spec, limit=len(expected) - 1)
        assert cut.truncated and len(cut) == len(expected) - 1


def next_sets(spec: GraphSpec, active: frozenset[str]) -> set[frozenset[str]]:
    """Return every set of nodes that may run in the superstep after ``active``."""
    options: dict[str, list[set[str]]] = {}
    routers = {r.source: r for r in spec.routers}
    for node in spec.nodes:
        guards = node.guards
        if node.then is not None:
            base = [set(node.then)]
        elif node.command is not None and node.command.names is not None:
            base = [{t} for t in node.command.names]
        elif node.name in routers:
            router = routers[node.name]
            guards = router.guards
            names = router.targets.names or ()
            if router.targets.many:
                base = [
                    {t for t, keep in zip(names, mask, strict=True) if keep}
                    for mask in product([False, True], repeat=len(names))
                ]
            else:
                base = [{t} for t in names]
        else:
            base = [set()]
        fallback = {g.target: g.otherwise for g in guards}
        expanded: list[set[str]] = []
        for chosen in base:
            swaps = [[t] if t not in fallback else [t, fallback[t]] for t in sorted(chosen)]
            for pick in product(*swaps):
                expanded.append({t for t in pick if t is not None and t != END})
        options[node.name] = expanded
    possible: set[frozenset[str]] = {frozenset()}
    for node in active:
        possible = {p | choice for p in possible for choice in options[node]}
    return possible


@SETTINGS
@given(graph_specs(max_nodes=5))
def test_coactive_pairs_are_sound(spec: GraphSpec) -> None:
    """Every pair of nodes some run can activate together is in the analyser's relation."""
    start = frozenset(n.name for n in spec.nodes if n.start)
    seen = {start}
    queue = [start]
    while queue:
        for nxt in next_sets(spec, queue.pop()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    graph = SpecGraph(spec)
    pairs = coactive_pairs(graph)
    for active in seen:
        for a in active:
            for b in active:
                if a != b and graph.rank[a] < graph.rank[b]:
                    assert (a, b) in pairs
